"""The decisions behind the marks a speed ratio carries wherever it is shown (report.md's tables, the crossover,
the plots, the console table): one function each, so no view can mark a cell another view leaves clean."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from specstack.figures import stats as st

Load = TypeVar("Load", int, float)  # a concurrency: int in a summary, a float in the speed rows


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


def rests_on(row: dict[str, Any]) -> list[str]:
    """What a speed row's ratios rest on that a reader must see beside them: "stall", "slow c=1", "beyond bound"."""
    return [
        word
        for word, key in (("stall", "stalled"), ("slow c=1", "slow_c1"), ("beyond bound", "beyond_bound"))
        if row.get(key)
    ]


def suffix(row: dict[str, Any], throughput: bool = False) -> str:
    """The marks as a ratio of the row shows them (" ⚠ stall ⚠ slow c=1"): a stall and a slow c=1 sit under every
    ratio of the row; a win past the free-drafting bound is the throughput ratio's only."""
    return "".join(f" ⚠ {m}" for m in rests_on(row) if throughput or m != "beyond bound")


def crossover_marks(rows: list[dict[str, Any]], key: str = "concurrency") -> tuple[str, str]:
    """What a crossover statement over `rows` (one method × task, by `key`: "concurrency" or "request_rate") rests
    on, for its latency and its throughput text: a statement over every load must say which cells it rests on."""

    def at(mark: str) -> str:
        found = sorted(r[key] for r in rows if mark in rests_on(r))  # written as the crossover writes its loads
        return (
            ""
            if not found
            else "c=" + ", ".join(f"{x:g}" for x in found)
            if key == "concurrency"
            else ", ".join(f"{x:g} req/s" for x in found)
        )

    both = "".join(
        f" ⚠ rests on a {mark} at {at(mark)} ({why})"
        for mark, why in (
            ("stall", "the speed table names it"),
            ("slow c=1", "a stall or a warm-up; the speed table's note names it"),
        )
        if at(mark)
    )
    past = at("beyond bound")
    return both, both + (
        f" ⚠ beyond bound at {past}: past the tokens per target pass a free drafter allows, "
        "the baseline's cell was slow"
        if past
        else ""
    )
