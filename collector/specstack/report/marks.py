"""The decisions behind the marks a speed ratio carries wherever it is shown (report.md's tables, the crossover,
the plots, the console table): one function each, so no view can mark a cell another view leaves clean."""
from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

from specstack.figures import stats as st

Load = TypeVar("Load", int, float)   # a concurrency: int in a summary, a float in the speed rows


def beyond_bound(ratio: float | None, bound: float | None) -> bool:
    """A throughput ratio above the method's tokens per target pass (beyond BOUND_TOLERANCE): more than a drafter
    that cost nothing could give, so the baseline's cell was slow, not the method fast."""
    return bool(bound and ratio and ratio > bound * st.BOUND_TOLERANCE)


def slow_c1(c1_e2el_ms: float | None, higher: Mapping[Load, float | None]) -> Load | None:
    """The higher concurrency of the same server whose mean E2EL beat its c=1 cell's (`higher`: concurrency -> mean
    E2EL ms), or None: nothing waits at c=1, so a c=1 slower per request is a stall or a warm-up."""
    known = {c: e for c, e in higher.items() if c > 1 and e}
    if not c1_e2el_ms or not known:
        return None
    faster = min(known, key=lambda c: known[c])
    return faster if c1_e2el_ms > known[faster] else None


def rests_on(row: dict) -> list[str]:
    """What a speed row's ratios rest on that a reader must see beside them: "stall", "slow c=1", "beyond bound"."""
    return [word for word, key in (("stall", "stalled"), ("slow c=1", "slow_c1"), ("beyond bound", "beyond_bound"))
            if row.get(key)]
