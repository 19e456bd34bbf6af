"""Part 4 of bench-harness: what the collector's own work costs as the workload grows (1x, 10x, 100x the
default), time and peak traced memory of parsing snapshots and of a run's aggregation."""

from __future__ import annotations

import math
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from selfbench.stats import growth
from selfbench.synthetic import ScaleInput, scale_input
from specstack.measure import accounting, snapshots
from specstack.results.records import read_records


def aggregate(data: ScaleInput) -> dict:
    """What the collector does with one run's snapshots and responses: parse both snapshots, diff, counter
    acceptance; per task read the records, sum per-request acceptance, cross-check (measure.windows.Windows.run +
    runs.method_summary.finish)."""
    before, after = snapshots.parse(data.before, 0.0), snapshots.parse(data.after, 1.0)
    counted = accounting.from_delta(snapshots.diff(before, after))
    out: dict[str, Any] = {"counter_steps": counted.steps if counted else None, "tasks": {}}
    for task, path in data.files.items():
        fields = read_records(path)
        reported = accounting.from_requests([f["spec"] for f in fields])
        checks = accounting.crosscheck_requests(reported, counted)
        out["tasks"][task] = {
            "requests": len(fields),
            "steps": reported.steps if reported else None,
            "checks": len(checks),
        }
    return out


def best_seconds(fn: Callable[[], object], repeats: int = 3) -> float:
    """The fastest of `repeats` timed calls (at least one): the least disturbed by the rest of the machine."""
    best = math.inf
    for _ in range(max(1, repeats)):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def _peak_bytes(fn: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def measure_scale(factors: tuple[int, ...] = (1, 10, 100), *, repeats: int = 3, folder: Path | None = None) -> dict:
    """Time (best of `repeats`) and peak traced memory of parsing and aggregation at each factor."""
    with tempfile.TemporaryDirectory(prefix="specstack-scale-") as tmp:
        folder = folder or Path(tmp)
        levels = []
        for factor in factors:
            data = scale_input(factor, folder)
            reps = max(1, repeats)
            levels.append(
                {
                    "factor": factor,
                    "requests": data.requests,
                    "page_lines": data.page_lines,
                    "kept_lines": snapshots.filter_exposition(data.after).count("\n"),
                    "page_bytes": len(data.after.encode()),
                    "records_bytes": sum(p.stat().st_size for p in data.files.values()),
                    "parse_seconds": best_seconds(partial(snapshots.parse, data.after), reps),
                    "aggregate_seconds": best_seconds(partial(aggregate, data), reps),
                    "parse_peak_bytes": _peak_bytes(partial(snapshots.parse, data.after)),
                    "aggregate_peak_bytes": _peak_bytes(partial(aggregate, data)),
                }
            )
            for p in data.files.values():
                p.unlink()
    return {
        "levels": levels,
        "base": {"requests_per_task": 64, "tasks": 2, "engines_per_page": 1},
        "parse_growth": growth([(lv["page_lines"], lv["parse_seconds"]) for lv in levels]),
        "aggregate_growth": growth([(lv["factor"], lv["aggregate_seconds"]) for lv in levels]),
        "parse_memory_growth": growth([(lv["page_lines"], lv["parse_peak_bytes"]) for lv in levels]),
        "aggregate_memory_growth": growth([(lv["factor"], lv["aggregate_peak_bytes"]) for lv in levels]),
    }
