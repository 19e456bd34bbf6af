"""SIGINT, SIGTERM and SIGHUP while the compose stack runs (Ctrl+C, `timeout`, a scheduler, a closed terminal).

The signal reaches make's whole process group: the docker commands running stop on it by themselves, and here
the first one raises `Interrupted` in the main thread, so every step's cleanup runs (the method's server stopped,
its Prometheus target cleared) before the stack is taken down. Later signals are ignored meanwhile, so a second
Ctrl+C cannot cut a cleanup short; commands started after the first signal inherit that. Threads (the slots of a
parallel sweep) see the same interruption through `check()` between their steps."""
from __future__ import annotations

import contextlib
import signal
import threading

SIGNALS: dict[int, str] = {signal.SIGINT: "INT", signal.SIGTERM: "TERM", signal.SIGHUP: "HUP"}


class Interrupted(BaseException):
    """A signal arrived; `code` is the exit status it ends with (128 + the signal's number)."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum
        self.name = SIGNALS.get(signum, str(signum))
        self.code = 128 + signum


_stop = threading.Event()
_signum = [0]


def _handler(signum, frame) -> None:
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
def handled():
    """Within: INT, TERM and HUP raise Interrupted (once; then they are ignored). Main thread only."""
    before = {s: signal.getsignal(s) for s in SIGNALS}
    for s in SIGNALS:
        signal.signal(s, _handler)
    try:
        yield
    finally:
        if not _stop.is_set():
            for s, h in before.items():
                signal.signal(s, h)
