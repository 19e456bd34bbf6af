"""Where a method run's time and CPU go, read from the events the run emits (specstack.events): its named steps,
each window's snapshots and measured interval. Nothing in the product is wrapped or replaced: the probe is a
listener, so a renamed step shows up as a missing figure here, and a new one as unattributed time."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import overload

from specstack import events


@overload
def process_cpu(pid: int) -> float: ...
@overload
def process_cpu(pid: None) -> None: ...
def process_cpu(pid: int | None) -> float | None:
    """CPU seconds (user + system) a process has used; None without a pid."""
    if pid is None:
        return None
    import psutil

    t = psutil.Process(pid).cpu_times()
    return t.user + t.system


@dataclass
class Step:
    name: str
    seconds: float
    cpu: float
    end: float  # time.monotonic() when it ended
    method: str | None = None
    deferred: bool = False  # ran in the background, off the method's path


@dataclass
class BenchWindow:
    name: str
    seconds: float = 0.0  # the measured interval (window.open -> window.close)
    prom_cpu: float | None = None  # Prometheus's CPU in that interval
    api_cpu: float | None = None  # the vLLM API server's
    duration: float | None = None  # bench's own timed duration
    output_throughput: float | None = None
    error: str | None = None
    load: float | None = None
    snapshot_cpu: float = 0.0  # the collector's CPU for the window's two snapshots (its edges)
    snapshot_wall: float = 0.0
    snapshot_fetches: int = 0


@dataclass
class RunProbe:
    """An events listener for one measured run: `with events.listening(probe): run_method(...)`."""

    prometheus_cpu: Callable[[], float] | None = None  # callable returning Prometheus's CPU seconds, or None
    steps: list[Step] = field(default_factory=list)
    windows: dict[str, BenchWindow] = field(default_factory=dict)
    snapshots: list[dict] = field(default_factory=list)
    server_pid: int | None = None
    ready_seconds: float | None = None
    _open: dict = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, event: str, f: dict) -> None:
        with self._lock:  # the deferred Prometheus check reports from its own thread
            handler = getattr(self, "_" + event.replace(".", "_"), None)
            if handler is not None:
                handler(f)

    def _server_ready(self, f: dict) -> None:
        self.server_pid, self.ready_seconds = f.get("pid"), f.get("seconds")

    def _step_end(self, f: dict) -> None:
        self.steps.append(Step(f["name"], f["seconds"], f["cpu"], f["at"], f.get("method"), bool(f.get("deferred"))))

    def _window_snapshot(self, f: dict) -> None:
        self.snapshots.append(dict(f))

    def _window_open(self, f: dict) -> None:
        if f["phase"] == "bench":
            self._open[f["name"]] = (
                time.perf_counter(),
                self._prom(),
                process_cpu(self.server_pid),
                os.getloadavg()[0],
            )

    def _window_close(self, f: dict) -> None:
        if f["name"] not in self._open:
            return
        t, prom, api, load = self._open.pop(f["name"])
        bench = f.get("bench") or {}
        api_now, prom_now = process_cpu(self.server_pid), self._prom()
        self.windows[f["name"]] = BenchWindow(
            f["name"],
            time.perf_counter() - t,
            None if prom is None else prom_now - prom,
            None if api is None or api_now is None else api_now - api,
            bench.get("duration"),
            bench.get("output_throughput"),
            f.get("error"),
            load,
        )

    def _prom(self) -> float | None:
        return self.prometheus_cpu() if self.prometheus_cpu else None

    def total(self, name: str, what: str = "seconds", *, deferred: bool | None = False) -> float:
        return sum(
            getattr(s, what) for s in self.steps if s.name == name and (deferred is None or s.deferred == deferred)
        )

    def bench_windows(self) -> list[dict]:
        """Each bench window with the CPU of the two snapshots that bracket it."""
        out = []
        for name, w in self.windows.items():
            edges = [s for s in self.snapshots if s["name"] == name]
            w.snapshot_cpu = sum(s["cpu"] for s in edges)
            w.snapshot_wall = sum(s["seconds"] for s in edges)
            w.snapshot_fetches = sum(s["fetches"] for s in edges)
            out.append(dict(w.__dict__))
        return out


def listening(probe: RunProbe):
    return events.listening(probe)
