"""Where a run's time went (#42): per method, its server start (with vLLM's own start-up phases), its measurement
windows by phase, and what is neither, the harness's own time (the pre-flight checks, the manifest, waiting for
the first Prometheus sample, the gaps between windows, stopping the server, describing what ran).
From what every summary already holds: `timings` (checks: the pre-flight, the run lock and the inputs before the
method's first step; server_ready; server_imports_beside_checks: of the checks, the seconds the method's server,
started held, was importing vLLM beside them; total: the method's wall time from its first step to its
description, the bundle's publication after it left out) and each window's start and end. A bundle from before
`checks` was recorded has its pre-flight in no row. The harness's time is what is neither a server's start nor a
window: the pre-flight's seconds beside a held server's imports are the start's (the server could not have served
sooner without them), the rest of the pre-flight the harness's. #42's goal: its share at most 2 %."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from specstack.report.format import num, pct
from specstack.report.render import Block
from specstack.report.rows import TimeBreakdownRow
from specstack.report.verdicts import label
from specstack.results.reader import RunData
from specstack.results.sweep_time import SweepTime

if TYPE_CHECKING:
    from specstack.report.contents import Report

PHASES = ("warmup", "acceptance", "sampled", "bench")
# server.startup's phases (server/startup.py), as vLLM's log states them; to_engine: from its first line to the engine
# core's, which a spawned engine core spends importing vLLM again
STARTUP = ("to_engine", "load", "compile", "warmup", "jit_kernel_warmup", "graph_capture")
# generated from the two tuples; TimeBreakdownRow (report/rows.py) spells the same columns out, and
# tests/report/test_rows.py holds the two equal
COLUMNS = [
    "method",
    "label",
    "total_s",
    "checks_s",
    "server_start_s",
    "startup_held_s",
    "startup_process_s",
    *[f"startup_{p}_s" for p in STARTUP],
    *[f"{p}_windows_s" for p in PHASES],
    "windows_s",
    "harness_s",
    "harness_share",
]
# The row of a sweep's time outside every method (results/sweep_time.py), after the methods' rows
OUTSIDE = "(outside the methods)"


def breakdown_rows(run: RunData) -> list[TimeBreakdownRow]:
    """One row per method with its `timings` (a bundle from before they were recorded has none: no row)."""
    rows: list[TimeBreakdownRow] = []
    for md in run.methods.values():
        timings = md.record.timings or {}
        total, ready, checks = timings.get("total"), timings.get("server_ready"), timings.get("checks")
        if not total:
            continue
        held = timings.get("server_imports_beside_checks")  # a held server's imports during the pre-flight
        start = None if ready is None else ready + (held or 0.0)
        total += checks or 0.0  # the pre-flight before the first step is the harness's too
        by_phase = dict.fromkeys(PHASES, 0.0)
        for w in md.record.window_list:
            if w.start is not None and w.end is not None and w.phase in by_phase:
                by_phase[w.phase] += w.end - w.start
        startup = (md.record.server.extra.get("startup") if md.record.server else None) or {}
        windows = sum(by_phase.values())
        harness = total - (start or 0.0) - windows
        logged = startup.get("total")  # vLLM's first log line to its last before ready
        # the rest of the start: the process's start and vLLM's imports before its first log line (and up to a
        # second of the harness's readiness poll after its last)
        process = None if ready is None or logged is None else max(0.0, ready - logged)
        rows.append(
            {
                "method": md.name,
                "label": md.display_name,
                "total_s": total,
                "checks_s": checks,
                "server_start_s": start,
                "startup_held_s": held,
                "startup_process_s": process,
                "startup_to_engine_s": startup.get("to_engine"),
                "startup_load_s": startup.get("load"),  # STARTUP's phases, each its column
                "startup_compile_s": startup.get("compile"),
                "startup_warmup_s": startup.get("warmup"),
                "startup_jit_kernel_warmup_s": startup.get("jit_kernel_warmup"),
                "startup_graph_capture_s": startup.get("graph_capture"),
                "warmup_windows_s": by_phase["warmup"],  # PHASES', each its column
                "acceptance_windows_s": by_phase["acceptance"],
                "sampled_windows_s": by_phase["sampled"],
                "bench_windows_s": by_phase["bench"],
                "windows_s": windows,
                "harness_s": harness,
                "harness_share": harness / total,
            }
        )
    outside = outside_row(SweepTime.from_manifest(run.manifest))
    return rows + [outside] if rows and outside else rows


def outside_row(sweep: SweepTime | None) -> TimeBreakdownRow | None:
    """What a `specstack sweep` spent outside every method (the process's start-up, the loop's own steps between
    and after the methods), all of it the harness's; None for a run without the record."""
    if sweep is None:
        return None
    row: dict[str, Any] = dict.fromkeys(COLUMNS)
    row.update(
        method=OUTSIDE,
        label=f"outside the methods (start-up {num(sweep.startup_s, 1)} s)",
        total_s=sweep.outside_s,
        windows_s=0.0,
        harness_s=sweep.outside_s,
        harness_share=1.0,
    )
    return row  # type: ignore[return-value]  # every column of TimeBreakdownRow, from COLUMNS


def totals(rows: list[TimeBreakdownRow]) -> dict[str, Any] | None:
    """The run's sums over its methods (start, windows, harness), or None when no method recorded timings."""
    if not rows:
        return None
    total = sum(r["total_s"] for r in rows)
    harness = sum(r["harness_s"] for r in rows)
    return {
        "total_s": total,
        "server_start_s": sum(r["server_start_s"] or 0.0 for r in rows),
        "windows_s": sum(r["windows_s"] for r in rows),
        "harness_s": harness,
        "harness_share": harness / total,
    }


def breakdown_table(rep: Report) -> list[Block]:
    rows = rep.time_breakdown
    whole = totals(rows)
    if whole is None:
        return []
    head = [
        "method",
        "total s",
        "server start s (held / process / to engine / load / compile / warm-up / graph capture)",
        "warm-up windows s",
        "acceptance s",
        "sampled s",
        "bench s",
        "harness s (share)",
    ]

    def startup(r: TimeBreakdownRow) -> str:
        parts = [
            r["startup_held_s"],
            r["startup_process_s"],
            r["startup_to_engine_s"],
            r["startup_load_s"],
            r["startup_compile_s"],
            r["startup_warmup_s"],
            r["startup_graph_capture_s"],
        ]
        return num(r["server_start_s"], 1) + (
            "" if all(p is None for p in parts) else " (" + " / ".join(num(p, 1) for p in parts) + ")"
        )

    def harness(r: TimeBreakdownRow) -> str:
        pre_flight = "" if r["checks_s"] is None else f"; pre-flight {num(r['checks_s'], 1)}"
        return f"{num(r['harness_s'], 1)} ({pct(r['harness_share'])}{pre_flight})"

    def outside(r: TimeBreakdownRow) -> list[str]:
        return [label(r), num(r["total_s"], 1), "", "", "", "", "", f"{num(r['harness_s'], 1)} (all of it)"]

    body = [
        outside(r)
        if r["method"] == OUTSIDE
        else [
            label(r),
            num(r["total_s"], 1),
            startup(r),
            *[
                num(w, 1)
                for w in (
                    r["warmup_windows_s"],
                    r["acceptance_windows_s"],
                    r["sampled_windows_s"],
                    r["bench_windows_s"],
                )
            ],
            harness(r),
        ]
        for r in rows
    ]
    whole_sweep = any(r["method"] == OUTSIDE for r in rows)
    body.append(
        [
            "the sweep, from its start to its report" if whole_sweep else "all methods",
            num(whole["total_s"], 1),
            num(whole["server_start_s"], 1),
            "",
            "",
            "",
            num(whole["windows_s"], 1) + " (every window)",
            f"{num(whole['harness_s'], 1)} ({pct(whole['harness_share'])})",
        ]
    )
    return [
        ("h2", "Where the run's time went"),
        ("table", head, body),
        (
            "p",
            "Per method, from its summary: total = its wall time from its pre-flight checks until what ran is "
            "described (the bundle's publication after it is not in it); "
            "server start = until vLLM answered (in brackets: held = the seconds of the pre-flight during which "
            "the server, started held beside it, was importing vLLM, counted as its start, not the harness's; "
            "process = before vLLM's first log line, the process's start and vLLM's imports, of a held server "
            "only what was left of them at its release; to engine = from that line to the engine core's first, its "
            "configuration and the engine core's start, which re-imports vLLM when spawned; then vLLM's own "
            "start-up phases, as its log states them); the windows are the measurements, by phase; harness = the "
            "rest, neither a start nor a window (pre-flight, manifest, the first Prometheus sample, the gaps "
            "between windows, stopping the server, describing what ran; in brackets the whole pre-flight's "
            "seconds, of which the held ones are the start's: vLLM's own argument checks, the model, the prompts' "
            "lengths, the run's inputs). "
            + (
                "Outside the methods = the rest of the `specstack sweep` process's time until its report began: "
                "its start-up (the interpreter, specstack's imports, the command line's checks, in brackets) and, "
                "between and after the methods, the run lock, the last Prometheus checks, a held server handed "
                "back. The report itself and the seal after it are not in it."
                if whole_sweep
                else "The run's report, after the last method, is not in it; nor is the time outside the methods "
                "(a run without the sweep loop's record of it: a parallel, compose or cluster run, or a bundle "
                "from before it was recorded)."
            ),
        ),
    ]
