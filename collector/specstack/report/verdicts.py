"""The report's Verdict section: one method × task × concurrency matrix whose words never contradict the
intervals beside them (report/speed.py `cell_verdict`), with what each verdict rests on: the latency it used, the
replication design, a single or unstable measurement."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from specstack.figures import stats as st
from specstack.report import findings
from specstack.report.format import interval, over_repeats, times
from specstack.report.guards import guard_marks
from specstack.report.loop_guard import verdict_lines as loop_lines
from specstack.report.render import Block
from specstack.report.rows import SpeedRow
from specstack.results.reader import EAGER_NOTE

if TYPE_CHECKING:
    from specstack.report.contents import Report


# The marks a method's name carries in every table, and what each means (the verdict legend).
TRUSTED = " ⚠ --trust-server"
MARKS = {
    "not comparable": "⚠ not comparable: synthetic rejection sampling, a stress figure, never a result.",
    "trust-server": "⚠ --trust-server: the attached server contradicted the method asked for (the warning above "
    "names how) and was measured anyway; the figures are that server's configuration, not the "
    "method's.",
}


def label(row: Mapping[str, Any]) -> str:
    """The method's name with its marks; a failed method (comparable None) has none."""
    text: str = (
        (row.get("label") or row["method"])
        + (" ⚠ not comparable" if row.get("comparable") is False else "")
        + (TRUSTED if row.get("server_contradicted") else "")
    )
    return text


VERDICT_WORDS = {
    "helped": "helped: the latency (TPOT) and the throughput interval both lie above 1.0×",
    "faster per token only": "faster per token only: the latency interval lies above 1.0×, the throughput one does not",
    "no clear difference": "no clear difference: the latency interval includes 1.0×",
    "slower": "slower: the latency interval lies below 1.0×",
    "point only": f"point only: fewer than {st.MIN_REPEATS} repeats on a side, no interval; the point estimate "
    "decides nothing",
}


def legend(matrix_text: str) -> list[str]:
    """The legend of the verdict matrix: only the verdicts and marks its cells show (a legend entry for a mark no
    cell has promises what the run does not have)."""
    entries = [(word, text) for word, text in VERDICT_WORDS.items()] + [
        (
            "⚠ single measurement",
            "⚠ single measurement: one repeat on a side, nothing says how much it moves from run to run.",
        ),
        (
            "⚠ unstable repeats",
            f"⚠ unstable repeats: the repeats of a side spread more than "
            f"{st.MAX_RELATIVE_MAD:.0%} (median absolute deviation ÷ median of the TPOT p50, E2EL "
            "p50 where TPOT is degenerate), so one noisy repeat can decide the median.",
        ),
        (
            "⚠ busy host",
            f"⚠ busy host: in a bench window of the cell (method or baseline) processes outside the "
            "server's, the bench client's and the collector's took more than "
            f"{st.MAX_OTHER_CPU_SHARE:.0%} of the window's core-seconds (their CPU time, read per "
            "process at the window's open and close); they competed with the server for the cores, so "
            "the cell was measured on a shared machine (the speed table shows the CPU-s).",
        ),
        (
            "⚠ client-bound",
            f"⚠ client-bound: in a bench window of the cell (method or baseline) the bench client "
            f"used more than {st.CLIENT_SATURATED:.0%} of one core (one asyncio loop, about one core "
            "at most): the requests waited for the client, so the cell measured the client as much "
            "as the server.",
        ),
        ("⚠ not comparable", MARKS["not comparable"]),
        (TRUSTED.strip(), MARKS["trust-server"]),
        (
            "⚠ tail disagrees",
            "⚠ tail disagrees: the p50 latency ratio lies on one side of 1.0× and the mean, the "
            "p95 or the throughput ratio on the other (by more than 5 %): the median hides a tail. "
            f"The p95 counts only where it is stable (≥ {st.min_samples(95)} requests a repeat on "
            "both sides; a † p95 decides nothing).",
        ),
        (
            "⚠ no batching gain",
            f"⚠ no batching gain: at this c > 1 a side (method or baseline) served under "
            f"{st.BATCHING_GAIN_MIN:g}× its own c=1 throughput: the server did not batch, or the "
            "client starved it; the ratio compares a stalled pipeline (the speed table's note "
            "says which side).",
        ),
        (
            "⚠ beyond bound",
            "⚠ beyond bound: the throughput ratio exceeds the method's tokens per target pass (by "
            f"more than {st.BOUND_TOLERANCE - 1:.0%}), more than a drafter that cost nothing could "
            "give: the baseline's cell was slow, not the method fast.",
        ),
        (
            "⚠ slow c=1",
            "⚠ slow c=1: a c=1 cell (the method's or its baseline's) was slower per request than the same "
            "server at a higher concurrency (mean E2EL); nothing waits at c=1, so a stall or a warm-up "
            "sits in that cell and in every ratio against it.",
        ),
        (
            "⚠ stall",
            "⚠ stall: bench's per-request data shows a stall in a repeat of the cell (method or baseline): "
            "a pause in sending, a TTFT/E2EL outlier, or c > 1 slower than one request after another (the "
            "speed table's note says which); the load average cannot see it.",
        ),
        (
            " · E2EL p50 ",
            "The latency is TPOT; where a side's TPOT is degenerate (a request of it was read in a "
            "burst, see the speed table's ‡), E2EL at the same fixed output length stands in and the "
            "cell says E2EL.",
        ),
    ]
    return [text for mark, text in entries if mark in matrix_text]


def _verdict_cell(r: SpeedRow) -> str:
    """A matrix cell: the verdict word, the two speedups with their intervals, and what the verdict rests on."""
    if r["latency_speedup"] is None:
        return "n/a (" + (r["note"] or "no baseline cell") + ")"
    text = (
        f"{r['verdict']} · {r['latency_basis']} p50 {times(r['latency_speedup'])}"
        f"{interval(r['latency_speedup_low'], r['latency_speedup_high'])}"
        f" (mean {times(r.get('latency_mean_speedup'))}, p95 {times(r.get('latency_p95_speedup'))})"
        f" · tput {times(r['throughput_speedup'])}"
        f"{interval(r['throughput_speedup_low'], r['throughput_speedup_high'])}"
    )
    if r.get("tail_disagrees"):
        text += " ⚠ tail disagrees"
    if r.get("no_batching_gain"):
        text += " ⚠ no batching gain"
    if r.get("beyond_bound"):
        text += " ⚠ beyond bound"
    if r.get("slow_c1"):
        text += " ⚠ slow c=1"
    if r.get("stalled"):
        text += " ⚠ stall"
    if r["stability"] == "single":
        text += " ⚠ single measurement"
    elif r["stability"] == "unstable":
        text += " ⚠ unstable repeats"
    if r.get("server_contradicted"):  # on every cell, not only the row's name: a verdict is read on its own
        text += TRUSTED
    if r.get("host_busy"):
        shares = [v for v in (r.get("other_cpu_share"), r.get("baseline_other_cpu_share")) if v is not None]
        text += f" ⚠ busy host (other processes {max(shares):.0%} of the core-seconds)"
    if r.get("client_bound"):
        shares = [v for v in (r.get("bench_cpu_share"), r.get("baseline_bench_cpu_share")) if v is not None]
        text += f" ⚠ client-bound (bench client {max(shares):.0%} of a core)"
    return text


def _failed(rep: Report) -> list[str]:
    out = [
        f"{f.name}: FAILED ({f.error or 'no reason recorded'})"
        + (f" — folder {f.path.name}, not used" if f.path else "")
        for f in rep.run.failed
        if not f.superseded
    ]
    out += [
        f"{f.name}: an earlier attempt failed ({f.error}); its folder {f.path.name if f.path else '?'} is not used"
        for f in rep.run.failed
        if f.superseded
    ]
    return out


def _contradicted(rep: Report) -> list[Block]:
    """Above the matrix, bold: the verdicts of these methods are about the configuration the attached server ran."""
    lines = [md.contradiction_warning for md in rep.run.methods.values() if md.contradiction_warning]
    return [("p", "**Measured despite a contradicting server** (--trust-server):"), ("ul", lines)] if lines else []


def _eager(rep: Report) -> list[Block]:
    """Above the matrix, bold: the figures of these methods are the eager smoke mode's, not compile mode's."""
    eager = rep.run.eager_smoke
    return [("p", f"**⚠ {EAGER_NOTE[0].upper() + EAGER_NOTE[1:]}:** {', '.join(eager)}.")] if eager else []


def _prompt_guards(rep: Report) -> list[Block]:
    """Above the matrix: the tasks whose prompts bias acceptance (report/guards.py; each task's section names
    what the guard read and the fix)."""
    lines = [f"{task}:{marks}" for task in rep.run.tasks if (marks := guard_marks(rep.guards, task))]
    return (
        [("p", "**Prompts that bias acceptance** (each task's section says what was read and the fix):"), ("ul", lines)]
        if lines
        else []
    )


def verdict(rep: Report) -> list[Block]:
    """One method × task × concurrency matrix of verdicts, the failed runs and the warnings."""
    run = rep.run
    out: list[Block] = [("h2", "Verdict")]
    failed = _failed(rep)
    if failed:
        out.append(("p", "**Failed runs** (reported, never used as data):"))
        out.append(("ul", failed))
    out += _contradicted(rep)
    out += _eager(rep)
    out += _prompt_guards(rep)
    out += loop_lines(rep)  # acceptance that rests partly on looping answers
    out += findings.table(findings.rows(run.findings))  # a hand-edited summary.json, named before any figure
    spec = [r for r in rep.speed if r["role"] == "spec"]
    order = {t: i for i, t in enumerate(run.tasks)}
    columns = sorted(
        {(r["task"], r["concurrency"]) for r in spec}, key=lambda tc: (order.get(tc[0], len(order)), tc[1])
    )
    methods = list(dict.fromkeys(r["method"] for r in spec))
    if not spec:
        out.append(("p", "No cell could be compared with a baseline of the same target (see the warnings)."))
    else:
        designs = sorted({r["design"] for r in spec if r.get("design")})
        with_ci = any(r.get("latency_speedup_low") is not None for r in spec)
        out.append(
            (
                "p",
                "Each cell: the verdict, the latency speedup (TPOT, or E2EL where TPOT is degenerate) as "
                f"the ratio of the p50 over requests "
                f"({over_repeats(max(r['repeats'] for r in spec))}), with the ratios of the means "
                "and of the p95s beside it, and the throughput speedup, against the baseline of the same "
                "target, task and concurrency"
                + (
                    f", with 95 % intervals where a side has at least {st.MIN_REPEATS} repeats"
                    if with_ci
                    else f"; no interval: no cell has {st.MIN_REPEATS} repeats on both sides"
                )
                + ". Replication: "
                + ("; ".join(designs) or "n/a")
                + ".",
            )
        )
        cells = {(r["method"], r["task"], r["concurrency"]): r for r in spec}
        rows = [
            [
                label(next(r for r in spec if r["method"] == m)),
                next(r for r in spec if r["method"] == m)["baseline"],
                *[_verdict_cell(cells[(m, t, c)]) if (m, t, c) in cells else "not run" for t, c in columns],
            ]
            for m in methods
        ]
        out.append(("table", ["method", "vs", *[f"{t} c={c}" for t, c in columns]], rows))
        out.append(("ul", legend(" ".join(str(x) for row in rows for x in row))))
    if run.warnings:
        out.append(("p", "**Warnings**:"))
        out.append(("ul", run.warnings))
    return out
