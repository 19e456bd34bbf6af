"""The decisions behind the marks a speed ratio carries wherever it is shown (report.md's tables, the crossover,
the plots, the console table): one function each, so no view can mark a cell another view leaves clean."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from specstack.figures import stats as st
from specstack.report.rows import SpeedRow

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


def rests_on(row: Mapping[str, Any]) -> list[str]:
    """What a speed row's ratios rest on that a reader must see beside them: "stall", "slow c=1", "beyond bound"."""
    return [
        word
        for word, key in (("stall", "stalled"), ("slow c=1", "slow_c1"), ("beyond bound", "beyond_bound"))
        if row.get(key)
    ]


def suffix(row: SpeedRow, throughput: bool = False) -> str:
    """The marks as a ratio of the row shows them (" ⚠ stall ⚠ slow c=1"): a stall and a slow c=1 sit under every
    ratio of the row; a win past the free-drafting bound is the throughput ratio's only."""
    return "".join(f" ⚠ {m}" for m in rests_on(row) if throughput or m != "beyond bound")


def crossover_marks(rows: Sequence[Mapping[str, Any]], key: str = "concurrency") -> tuple[str, str]:
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


# The marks on the speed rows themselves (report/speed.py speed_rows), each with its sentence in the row's note


def add_note(row: SpeedRow, text: str) -> None:
    row["note"] = "; ".join(x for x in (row.get("note"), text) if x)


def mark_beyond_bound(r: SpeedRow) -> None:
    """A throughput ratio above the method's tokens per target pass: more than a drafter that cost nothing could
    give, so the baseline's cell was slow, not the method fast (seen: ngram 1.23× with a bound of 1.09, against a
    c=1 baseline slower per request than its own c=4)."""
    bound, ratio = r.get("tokens_per_target_pass"), r.get("throughput_speedup")
    r["beyond_bound"] = None
    if bound and ratio and beyond_bound(ratio, bound):  # (both known: the formats below need them)
        r["beyond_bound"] = f"{ratio:.2f}× > {bound:.2f} tokens per target pass"
        add_note(
            r,
            f"throughput {ratio:.2f}× is above the {bound:.2f}× a free drafter allows (its tokens per "
            "target pass): not physically the method's; the baseline's cell was slow",
        )


def mark_slow_c1(rows: list[SpeedRow]) -> None:
    """Names a c=1 cell slower per request than the same server's higher-concurrency cells (mean E2EL above theirs:
    at c=1 nothing waits, so a stall or a warm-up), on its own row and on every row compared with it."""
    slow: dict[tuple[str, str], str] = {}
    for r in rows:
        if r["concurrency"] == 1 and r.get("e2el_mean_ms"):
            higher = {
                x["concurrency"]: x.get("e2el_mean_ms")
                for x in rows
                if (x["method"], x["task"]) == (r["method"], r["task"]) and (x["concurrency"] or 0) > 1
            }
            faster = slow_c1(r["e2el_mean_ms"], higher)
            if faster is not None:
                slow[(r["method"], r["task"])] = (
                    f"{r['method']}'s c=1 slower per request than its c="
                    f"{faster:g} (mean E2EL {r['e2el_mean_ms']:.0f} "
                    f"against {higher[faster]:.0f} ms)"
                )
    for r in rows:
        r["slow_c1"] = None
        if r["concurrency"] != 1:
            continue
        found = [slow[k] for k in ((r["method"], r["task"]), (r["baseline"], r["task"])) if k in slow]
        if found:
            r["slow_c1"] = "; ".join(found)
            add_note(
                r,
                "; ".join(found) + ": nothing waits at c=1, so a stall or a warm-up; a ratio against "
                "it is inflated or deflated by that",
            )


def mark_no_batching_gain(rows: list[SpeedRow]) -> None:
    """Marks the c > 1 cells whose side (method or baseline) served no more than at c=1: the server did not batch,
    or the client starved it (answers read in a burst). A ratio there compares a stalled pipeline, however clean
    its number looks (seen: eagle3 chat c=4 at 0.16×, its throughput 1.04× its own c=1)."""
    at_c1 = {(r["method"], r["task"]): r["output_throughput"] for r in rows if r["concurrency"] == 1}
    for r in rows:
        r["no_batching_gain"] = None
        if not r["concurrency"] or r["concurrency"] <= 1:
            continue
        sides = {"method": (r["output_throughput"], at_c1.get((r["method"], r["task"])))}
        if r["baseline"]:
            sides["baseline"] = (r["baseline_output_throughput"], at_c1.get((r["baseline"], r["task"])))
        flat = [
            f"{side} {tp / one:.2f}× its c=1"
            for side, (tp, one) in sides.items()
            if tp and one and tp < st.BATCHING_GAIN_MIN * one
        ]
        if flat:
            r["no_batching_gain"] = "; ".join(flat)
            add_note(
                r,
                f"no batching gain at c={r['concurrency']:g}: "
                + "; ".join(flat)
                + " (the server did not batch, or the client starved it)",
            )
