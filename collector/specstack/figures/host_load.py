"""How busy the host was while a bench cell ran. `cell_cpu`: the CPU time other processes and the bench client took
in its windows (measure/cpu_share.py records it; the report's and compare's busy-host and client-bound marks read
it here, figures/stats.py `host_busy` and `client_bound` judge it). `host_load_per_core`: the 1-minute load average
per core at the windows' open and close, kept as data only (on a CPU server the measured system alone keeps it
near 1 per core, so it cannot tell one cell from another)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from specstack.results import layout
from specstack.results.summary import Window


def bench_window(cell: Mapping[str, Any]) -> str | None:
    """The cell's window name, `bench/<cell>` (a merged session's file is `../<method>-s<i>/bench/<cell>.json`)."""
    return layout.bench_window(layout.bench_cell(cell["file"])) if cell.get("file") else None


def host_load_per_core(windows: Iterable[Window], cells: Iterable[Mapping[str, Any]]) -> float | None:
    """Highest 1-minute load average per core seen at the bench windows of the cells (None: not recorded)."""
    loads: list[float] = []
    names = {bench_window(c) for c in cells}
    for w in windows:
        load = w.host_load or {}
        if w.name in names and load.get("cores"):
            loads += [v / load["cores"] for v in (load.get("open"), load.get("close")) if v is not None]
    return max(loads, default=None)


@dataclass(frozen=True)
class CellCpu:
    """Who else used the CPU at a cell's bench windows (measure/cpu_share.py), the worst window of each figure:
    other processes' CPU seconds and their share of the window's core-seconds, and the bench client's CPU as a
    share of one core. None: not recorded (a bundle before issue 41) or not measured (a server with no local
    process), never 0."""

    other_s: float | None = None
    other_share: float | None = None
    bench_share: float | None = None


def cell_cpu(windows: Iterable[Window], cells: Iterable[Mapping[str, Any]]) -> CellCpu:
    names = {bench_window(c) for c in cells}
    cpus = [w.cpu for w in windows if w.name in names and w.cpu]
    others = [c for c in cpus if c.get("other_share") is not None]
    worst = max(others, key=lambda c: float(c["other_share"]), default=None)
    shares = [float(c["bench_share_of_core"]) for c in cpus if c.get("bench_share_of_core") is not None]
    return CellCpu(
        other_s=None if worst is None else float(worst["other"]),
        other_share=None if worst is None else float(worst["other_share"]),
        bench_share=max(shares, default=None),
    )
