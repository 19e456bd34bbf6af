"""The signals that end a run (SIGINT from Ctrl+C, SIGTERM from `timeout`, a scheduler or `kill`, SIGHUP from a
closed terminal) become one exception, Interrupted, raised in the main thread. Python's default for SIGTERM
and SIGHUP is to die on the spot, which skips every cleanup: a killed harness once left its vLLM server (its
own session, so the signal never reached it) holding the GPU and the port. With this, each signal runs the
same bounded cleanup as Ctrl+C, and the exit status is 128 + the signal's number.

One module for both front doors: `specstack` (cli/main.py: the server's process group stopped, the bundle
finished as failed with "interrupted") and the compose stack make drives (`python3 -m specstack.host`,
host/lifecycle.py: each step's cleanup, the method's server stopped and its Prometheus target cleared
(host/compose_server.py), then
`make down`). Threads (the slots of a compose parallel sweep) see the same interruption through `check()` or
`interrupted()` between their steps.

host/ imports this module and make runs host/ with the host's plain python3: standard library only, and
Python 3.8 at runtime (annotations postponed; no 3.9+ API)."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Iterator

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


# A KeyboardInterrupt, not a bare BaseException: the native run treats a plain Ctrl+C (Python's own SIGINT
# handler, outside `as_exception()`) and a handled signal alike (runs/outcome.py, measure/windows.py and
# cli/main.py catch KeyboardInterrupt). host/ catches Interrupted by name, and pipeline/slots.py tells an interruption
# from a job's failure by "not an Exception", which a KeyboardInterrupt is not either.
class Interrupted(KeyboardInterrupt):
    """A signal asked the run to stop; `exit_code` is the status it ends with (128 + the signal's number)."""

    def __init__(self, signum: int):
        self.signum = signum
        self.name = signal.Signals(signum).name  # "SIGTERM"
        super().__init__(self.name)

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


def reason(error: BaseException) -> str:
    """What a summary says about an interrupted run (a bare KeyboardInterrupt is Ctrl+C)."""
    name = getattr(error, "name", "SIGINT")
    return f"interrupted ({'Ctrl+C' if name == 'SIGINT' else name}); rerun the same command to resume"


_stop = threading.Event()  # set by the first signal of the outermost as_exception() span
_signum = [0]
_depth = [0]  # as_exception() spans open (`specstack containers` nests host/'s in cli/main's)


def _handler(signum: int, _frame: object) -> None:
    if _stop.is_set():
        return  # already stopping (an enclosing span's handler, put back while its cleanup runs)
    # Ignored from now on, not merely returned from: a second Ctrl+C or a scheduler's repeated SIGTERM cannot cut
    # the (bounded) cleanup short, and the commands that cleanup starts (`docker compose down`, a server's stop)
    # inherit the ignore, which a Python handler is not (exec resets it to the default: the command would die).
    for s in SIGNALS:
        signal.signal(s, signal.SIG_IGN)
    _signum[0] = signum
    _stop.set()
    raise Interrupted(signum)


def check() -> None:
    """Raise Interrupted in this thread once a signal has arrived (a slot's thread between its steps)."""
    if _stop.is_set():
        raise Interrupted(_signum[0])


def interrupted() -> bool:
    return _stop.is_set()


@contextlib.contextmanager
def as_exception() -> Iterator[None]:
    """While inside: the first of SIGNALS raises Interrupted in the main thread (and check() in any other); every
    later one is ignored until the outermost span ends, then the handlers from before it come back. Outside the
    main thread (signals cannot be handled there) it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    if _depth[0] == 0:
        _stop.clear()  # a new run starts uninterrupted (a process may run several, the tests do)
    previous = {s: signal.getsignal(s) for s in SIGNALS}
    if not _stop.is_set():
        for s in SIGNALS:
            signal.signal(s, _handler)
    _depth[0] += 1
    try:
        yield
    finally:
        _depth[0] -= 1
        if _depth[0] == 0 or not _stop.is_set():  # interrupted inside an enclosing span: its cleanup goes on
            for s, h in previous.items():
                signal.signal(s, h)


def default_in_child() -> None:
    """In a forked child (the bench client): the parent's handler is not the child's; the default ends it."""
    for s in SIGNALS:
        signal.signal(s, signal.SIG_DFL)


def stop_when_orphaned(poll: float = 0.5) -> threading.Thread:
    """A process that a harness started and waits for (a parallel sweep's `slot-run`) stops as if SIGTERMed once
    that harness is gone, however it went (kill -9 included): the same bounded cleanup (its server stopped, its
    bundle kept as failed) instead of measuring on, unwatched, into a run nobody reads. A dead parent's child is
    re-parented (to init or a subreaper), so a changed parent pid is the sign; a daemon thread polls it."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(poll)
        os.kill(os.getpid(), signal.SIGTERM)

    thread = threading.Thread(target=watch, name="stop-when-orphaned", daemon=True)
    thread.start()
    return thread
