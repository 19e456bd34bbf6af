"""Does B's speedup over its baseline fall inside what A measured? Per method x task x concurrency in both runs:
A's speedup against its own baseline with its 95 % interval (report/speed.py, over A's repeats or sessions), and
B's point (and interval, where it has one).

This is the question a quicker run asks of a slower, replicated one ("does the one-repeat sweep read what the
3-session sweep measured?"), and it differs from the speed table's B/A of raw figures: each side's speedup is
taken against the baseline of its own run, so a host that is slower for both methods alike moves no speedup.
Verdict: "inside" A's interval, "above"/"below" it, or "no interval in A" under MIN_REPEATS a side there.
"""

from __future__ import annotations

from specstack.compare.pairing import SPEED, Pair
from specstack.compare.rows import SpeedupRow
from specstack.figures import stats as st
from specstack.report import rows as report_rows
from specstack.report.speed import speed_rows as report_speed_rows
from specstack.results.reader import RunData

FIGURES = ("throughput", "latency")  # the report's two headline speedups


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


def verdict(point: float | None, low: float | None, high: float | None, repeats: int) -> str:
    """Where B's point lies against A's interval (low, high); "no interval in A" where A has none."""
    if point is None:
        return "n/a"
    if low is None or high is None:
        return f"no interval in A ({repeats} repeat{'s' if repeats != 1 else ''}; needs ≥ {st.MIN_REPEATS})"
    if point < low:
        return "below A's interval"
    if point > high:
        return "above A's interval"
    return "inside A's interval"


def speedup_rows(pairs: list[Pair], run_a: RunData, run_b: RunData) -> list[SpeedupRow]:
    """One row per speculative pair x concurrency in both runs x figure (FIGURES)."""
    rows_a, rows_b = _spec_rows(run_a), _spec_rows(run_b)
    out: list[SpeedupRow] = []
    for pair in pairs:
        blocked = pair.not_comparable(SPEED)
        for key in sorted(k for k in rows_a if k[:2] == (pair.method, pair.task) and k in rows_b):
            ra, rb = rows_a[key], rows_b[key]
            for figure in FIGURES:
                a, b = _speedup(ra, figure), _speedup(rb, figure)
                if a[0] is None and b[0] is None:
                    continue
                basis = f"{ra['latency_basis']}/{rb['latency_basis']}" if figure == "latency" else None
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
                        "design_a": ra["design"],
                        "b": b[0],
                        "b_low": b[1],
                        "b_high": b[2],
                        "design_b": rb["design"],
                        "verdict": blocked or verdict(b[0], a[1], a[2], min(ra["repeats"], ra["baseline_repeats"])),
                        "comparable": blocked is None,
                    }
                )
    return out


def tally(rows: list[SpeedupRow]) -> tuple[int, int]:
    """(inside, judged): B's comparable speedups inside A's interval, of those A has an interval for."""
    judged = [r for r in rows if r["comparable"] and r["verdict"].endswith("A's interval")]
    return sum(r["verdict"].startswith("inside") for r in judged), len(judged)
