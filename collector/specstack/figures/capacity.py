"""Capacity at an SLO: the highest open-loop rate at which a method still serves its requests within the targets.

A rate *passes* when the median over its repeats of the SLO share (requests meeting every --slo target ÷ requests
completed, measure/goodput.py) is at least the asked share. The search starts from the rates already measured
(the run's rate cells), takes the highest passing rate below the lowest failing one as the bracket, and bisects it
geometrically (at √(pass × fail)) with at most `max_probes` more rates, until the failing rate is within
`resolution` (relative) of the passing one.
With no failing rate it doubles upward; with no passing rate it halves downward; both within the same budget.
The answer is a bracket, never a point pretending to be exact: capacity ≥ `rate` (passed), < `bound` (failed).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from statistics import median
from typing import Any, cast

SIGNIFICANT = 3  # probe rates are rounded to 3 significant digits: readable cell names, no false precision


def passes(shares: list[float | None], share: float) -> bool:
    """A rate's verdict from its repeats' SLO shares (None: a repeat without figures fails the rate)."""
    known = [s for s in shares if s is not None]
    return bool(shares) and len(known) == len(shares) and median(known) >= share


def rounded(rate: float) -> float:
    return float(f"{rate:.{SIGNIFICANT}g}")


def bracket(tested: dict[float, bool]) -> tuple[float | None, float | None]:
    """(highest passing rate below the lowest failing one, lowest failing rate); None where there is none.
    A passing rate above a failing one (noise, or a server that recovers) does not raise the capacity."""
    failing = min((r for r, ok in tested.items() if not ok), default=None)
    passing = max((r for r, ok in tested.items() if ok and (failing is None or r < failing)), default=None)
    return passing, failing


def _next_rate(low: float | None, high: float | None) -> float:
    if low is None:
        return rounded(cast(float, high) / 2)  # the search asks only with a rate on one side at least
    if high is None:
        return rounded(low * 2)
    return rounded(math.sqrt(low * high))  # geometric: rates span orders of magnitude, the resolution is relative


def resolved(low: float | None, high: float | None, resolution: float) -> bool:
    return low is not None and high is not None and high <= low * (1 + resolution)


def search(
    probe: Callable[[float], bool], tested: dict[float, bool], *, max_probes: int, resolution: float
) -> dict[str, Any]:
    """Bisect the capacity bracket with `probe(rate) -> passed`, starting from `tested` (rate -> passed).

    Returns {"kind": "found" (resolved bracket) | "unresolved" (probes ran out) | "at least" (no rate failed) |
    "never" (no rate passed), "rate": highest passing rate or None, "bound": lowest failing rate or None,
    "resolution", "probes": [{"rate", "passed"}] in the order run, "text": one sentence}."""
    tested = dict(tested)
    probes: list[dict[str, Any]] = []
    low, high = bracket(tested)
    while len(probes) < max_probes and not resolved(low, high, resolution) and (low or high):
        rate = _next_rate(low, high)
        if rate in tested or rate <= 0 or (low is not None and high is not None and not low < rate < high):
            break  # the bracket is narrower than the rounding: nothing new to learn
        tested[rate] = passed = probe(rate)
        probes.append({"rate": rate, "passed": passed})
        low, high = bracket(tested)
    return {
        "kind": _kind(low, high, resolution),
        "rate": low,
        "bound": high,
        "resolution": resolution,
        "probes": probes,
        "text": describe(low, high, resolution),
    }


def _kind(low: float | None, high: float | None, resolution: float) -> str:
    if low is None:
        return "never"
    if high is None:
        return "at least"
    return "found" if resolved(low, high, resolution) else "unresolved"


def describe(low: float | None, high: float | None, resolution: float) -> str:
    if low is None:
        return (
            f"never meets the SLO: even {high:g} req/s, the lowest rate tested, fails it"
            if high
            else "no rate was tested"
        )
    if high is None:
        return f"meets the SLO at every rate tested: capacity at least {low:g} req/s (no rate failed)"
    within = "" if resolved(low, high, resolution) else f"; not resolved to {resolution:.0%}: the probes ran out"
    return f"{low:g} req/s (meets the SLO; {high:g} req/s fails it){within}"


def ratio(method: dict[str, Any] | None, base: dict[str, Any] | None) -> dict[str, float] | None:
    """Capacity speedup against the baseline with the interval the two brackets allow: the method's capacity lies
    in [rate, bound), the baseline's too, so the ratio lies in [rate_m / bound_b, bound_m / rate_b]
    (an open end is math.inf, a missing one None)."""
    if not method or not base or method.get("rate") is None or base.get("rate") is None:
        return None
    point = method["rate"] / base["rate"]
    low = method["rate"] / base["bound"] if base.get("bound") else 0.0
    high = method["bound"] / base["rate"] if method.get("bound") else math.inf
    return {"point": point, "low": low, "high": high}
