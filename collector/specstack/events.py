"""What a run is doing, as it happens. The run emits named events; listeners (the live progress display,
a benchmark of the harness) subscribe. Nobody listening costs one empty loop per event.

Events and their fields (times are time.monotonic() seconds, taken here):
  sweep.start    methods: list[str]                 the methods a sweep will run, in order
  method.start   method, index, total               index counts from 1
  method.skip    method, reason                     already done in this run
  server.start   method, runtime                    a server is starting (native) or being waited for (url)
  server.ready   method, seconds
  window.start   name, phase, total                 total: requests the window sends (None if unknown)
  window.snapshot name, when, seconds, cpu, fetches  a settled /metrics snapshot at a window edge
  window.open    name, phase                        the measured interval starts (after the before-snapshot)
  window.close   name, phase, error, bench          ... and ends (before the after-snapshot); bench: its JSON
  window.progress name, done, total                 requests answered so far
  window.end     name, status
  step.start     name, (method)                     a named step of a method run or of the monitoring
  step.end       name, seconds, cpu, (method)       cpu: this process's CPU seconds (all threads) in the step
  method.end     method, status, seconds
  sweep.end      -
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator

Listener = Callable[[str, dict], None]
_listeners: list[Listener] = []
_lock = threading.Lock()


def emit(event: str, **fields) -> None:
    """Tell every listener. A listener that raises is dropped with a note: a display must never break a
    measurement."""
    if not _listeners:
        return
    fields["at"] = time.monotonic()
    for listener in list(_listeners):
        try:
            listener(event, fields)
        except Exception as e:  # noqa: BLE001
            unsubscribe(listener)
            import sys

            print(
                f"specstack: progress listener {listener!r} failed ({type(e).__name__}: {e}); detached", file=sys.stderr
            )


def listening_now() -> bool:
    """Whether anyone listens: lets an emitter skip work (reading a log) that only a listener needs."""
    return bool(_listeners)


def subscribe(listener: Listener) -> None:
    with _lock:
        _listeners.append(listener)


def unsubscribe(listener: Listener) -> None:
    with _lock:
        if listener in _listeners:
            _listeners.remove(listener)


@contextlib.contextmanager
def listening(listener: Listener) -> Iterator[Listener]:
    subscribe(listener)
    try:
        yield listener
    finally:
        unsubscribe(listener)


class Recorder:
    """A listener that keeps every event: for tests and for measuring the harness."""

    def __init__(self) -> None:
        self.events: list[tuple[str, dict]] = []

    def __call__(self, event: str, fields: dict) -> None:
        self.events.append((event, dict(fields)))

    def named(self, event: str) -> list[dict]:
        return [f for e, f in self.events if e == event]


@contextlib.contextmanager
def step(name: str, **fields) -> Iterator[None]:
    """Time a named step and tell listeners (the harness benchmark reads where a method run's time goes)."""
    emit("step.start", name=name, **fields)
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        yield
    finally:
        emit("step.end", name=name, seconds=time.perf_counter() - wall, cpu=time.process_time() - cpu, **fields)
