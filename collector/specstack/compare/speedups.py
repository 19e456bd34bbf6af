"""Does B's speedup over its baseline read what A measured? Per method x task x concurrency in both runs: A's
speedup against its own baseline with its 95 % confidence interval (report/speed.py) and its 95 % prediction
interval (figures/stats.py prediction_ratio: where one more run would land, from A's repeats or sessions), and
B's point against the prediction interval.

This is the question a quicker run asks of a slower, replicated one ("does the one-repeat sweep read what the
3-session sweep measured?"). It differs from the speed table's B/A of raw figures: each side's speedup is taken
against the baseline of its own run, so a host slower for both methods alike moves no speedup. The yardstick is
the prediction interval, not the confidence interval of A's median: with 3 repeats a side, a new run with nothing
changed lands inside the latter only about two times in three.
Verdict: "inside", "above" or "below" A's prediction interval, or "no interval in A" under MIN_REPEATS there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from specstack.compare.pairing import SPEED, Pair
from specstack.compare.rows import SpeedupRow
from specstack.compare.speed import by_concurrency
from specstack.figures import stats as st
from specstack.report import rows as report_rows
from specstack.report.speed import session_pairs, sessions
from specstack.report.speed import speed_rows as report_speed_rows
from specstack.results.reader import MethodData, RunData

FIGURES = ("throughput", "latency")  # the report's two headline speedups
EXPECTED_INSIDE = 0.95  # the share of B's figures a 95 % prediction interval holds when nothing changed


def _speedup(row: report_rows.SpeedRow, figure: str) -> tuple[float | None, float | None, float | None]:
    """(point, low, high) of one of FIGURES in a report row."""
    if figure == "throughput":
        return row["throughput_speedup"], row["throughput_speedup_low"], row["throughput_speedup_high"]
    return row["latency_speedup"], row["latency_speedup_low"], row["latency_speedup_high"]


def _spec_rows(run: RunData) -> dict[tuple[str, str, int], report_rows.SpeedRow]:
    """The report's closed-loop rows of a run's speculative methods, by method x task x concurrency."""
    return {
        (r["method"], r["task"], r["concurrency"]): r
        for r in report_speed_rows(run)
        if r["role"] == "spec" and r["concurrency"] is not None
    }


def prediction(
    md: MethodData, base: MethodData | None, task: str, c: int, figure: str, basis: str | None
) -> tuple[float, float] | None:
    """A's 95 % prediction interval of one speedup: throughput method/baseline, latency baseline/method (TPOT p50,
    or E2EL p50 where the report's basis is E2EL); session pairs where both sides ran as sessions."""
    key = "output_throughput" if figure == "throughput" else ("p50_e2el_ms" if basis == "E2EL" else "p50_tpot_ms")
    mine = by_concurrency(md, task).get(c, [])
    theirs = by_concurrency(base, task).get(c, []) if base else []
    # read by a key chosen at run time: as mappings (report/speed.py's _vals does the same)
    num: Sequence[Mapping[str, Any]] = mine if figure == "throughput" else theirs
    den: Sequence[Mapping[str, Any]] = theirs if figure == "throughput" else mine
    if sessions(md) and sessions(base):
        pairs = session_pairs(mine, theirs, key)  # (method, baseline) per session
        return st.prediction_ratio(pairs=pairs if figure == "throughput" else [(y, x) for x, y in pairs])
    return st.prediction_ratio(
        [x[key] for x in num if x.get(key) is not None], [x[key] for x in den if x.get(key) is not None]
    )


def verdict(point: float | None, interval: tuple[float, float] | None, repeats: int) -> str:
    """Where B's point lies against A's prediction interval; "no interval in A" where A has none."""
    if point is None:
        return "n/a"
    if interval is None:
        return f"no interval in A ({repeats} repeat{'s' if repeats != 1 else ''}; needs ≥ {st.MIN_REPEATS})"
    low, high = interval
    if point < low:
        return "below A's prediction interval"
    if point > high:
        return "above A's prediction interval"
    return "inside A's prediction interval"


def speedup_rows(pairs: list[Pair], run_a: RunData, run_b: RunData) -> list[SpeedupRow]:
    """One row per speculative pair x concurrency in both runs x figure (FIGURES)."""
    rows_a, rows_b = _spec_rows(run_a), _spec_rows(run_b)
    out: list[SpeedupRow] = []
    for pair in pairs:
        blocked = pair.not_comparable(SPEED)
        base_a = run_a.methods.get(pair.a.baseline or "")
        for key in sorted(k for k in rows_a if k[:2] == (pair.method, pair.task) and k in rows_b):
            ra, rb = rows_a[key], rows_b[key]
            for figure in FIGURES:
                a, b = _speedup(ra, figure), _speedup(rb, figure)
                if a[0] is None and b[0] is None:
                    continue
                basis = ra["latency_basis"] if figure == "latency" else None
                pred = prediction(pair.a, base_a, pair.task, key[2], figure, basis)
                judged = verdict(b[0], pred, min(ra["repeats"], ra["baseline_repeats"]))
                if basis is not None and rb["latency_basis"] != basis:
                    judged = f"n/a: latency on {basis} p50 in A, {rb['latency_basis']} p50 in B"
                out.append(
                    {
                        "method": pair.method,
                        "label": pair.label,
                        "task": pair.task,
                        "concurrency": key[2],
                        "figure": figure,
                        "basis": basis,
                        "a": a[0],
                        "a_low": a[1],
                        "a_high": a[2],
                        "a_predicted_low": None if pred is None else pred[0],
                        "a_predicted_high": None if pred is None else pred[1],
                        "design_a": ra["design"],
                        "b": b[0],
                        "b_low": b[1],
                        "b_high": b[2],
                        "design_b": rb["design"],
                        "verdict": blocked or judged,
                        "comparable": blocked is None,
                    }
                )
    return out


def tally(rows: list[SpeedupRow]) -> tuple[int, int]:
    """(inside, judged): B's comparable speedups inside A's prediction interval, of those A has one for."""
    judged = [r for r in rows if r["comparable"] and r["verdict"].endswith("A's prediction interval")]
    return sum(r["verdict"].startswith("inside") for r in judged), len(judged)


def summary(rows: list[SpeedupRow], see: str = "") -> str | None:
    """The count in words, against what chance alone leaves outside (`see`: a pointer to the table, appended
    inside the parenthesis); None when nothing was judged."""
    inside, judged = tally(rows)
    if not judged:
        return None
    return (
        f"**{inside} of {judged}** of B's speedups lie inside A's 95 % prediction intervals (about "
        f"{EXPECTED_INSIDE * judged:.0f} expected when nothing changed; {judged - inside} outside{see})."
    )
