"""The signals that end a run (SIGINT from Ctrl+C, SIGTERM from `timeout`, a scheduler or `kill`, SIGHUP from a
closed terminal) become one exception, Interrupted, raised in the main thread. Python's default for SIGTERM
and SIGHUP is to die on the spot, which skips every cleanup: a killed harness once left its vLLM server (its
own session, so the signal never reached it) holding the GPU and the port. With this, each signal runs the
same bounded cleanup as Ctrl+C: the server's process group stopped, the bundle finished as failed with
"interrupted", and an exit status of 128 + the signal's number."""
from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Iterator

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interrupted(KeyboardInterrupt):
    """A signal asked the run to stop."""

    def __init__(self, signum: int):
        self.signum = signum
        self.name = signal.Signals(signum).name
        super().__init__(self.name)

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


def reason(error: BaseException) -> str:
    """What a summary says about an interrupted run (a bare KeyboardInterrupt is Ctrl+C)."""
    name = getattr(error, "name", "SIGINT")
    return f"interrupted ({'Ctrl+C' if name == 'SIGINT' else name}); rerun the same command to resume"


@contextlib.contextmanager
def as_exception() -> Iterator[None]:
    """While inside: the first of SIGNALS raises Interrupted; any later one is ignored, so a second Ctrl+C or a
    scheduler's repeated SIGTERM cannot cut the (bounded) cleanup short and leave a server or half a bundle.
    Outside the main thread (signals cannot be handled there) it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    raised: list[int] = []

    def handler(signum, _frame):
        if raised:
            return   # already stopping
        raised.append(signum)
        raise Interrupted(signum)

    previous = {s: signal.signal(s, handler) for s in SIGNALS}
    try:
        yield
    finally:
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
