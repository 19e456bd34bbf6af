"""How busy the host was while a bench cell ran: the 1-minute load average per core recorded at its windows'
open and close (measure/ records it; the report's and compare's busy-host marks read it here, and
figures/stats.py `host_busy` judges it against MAX_LOAD_PER_CORE)."""
from __future__ import annotations

from collections.abc import Iterable, Mapping
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
