"""The report's "Load" section: speedup against the baseline per offered rate (table and plot), the crossover in
rate, the capacity at the SLO, and the per-user vs system speed frontier (table and plot). Rows: report/load.py."""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING

import matplotlib.pyplot as plt

from specstack.report import marks
from specstack.report.format import interval, num, times
from specstack.report.load import LITTLE_TOLERANCE, TTFT_QUEUE_FACTOR
from specstack.report.plots import png_bytes, safe_name, speedup_caption, speedup_series, speedup_vs_concurrency
from specstack.report.render import Block
from specstack.report.rows import CapacityRow, FrontierRow
from specstack.report.verdicts import label as _label
from specstack.results.layout import REPORT_DIR

if TYPE_CHECKING:
    from specstack.report.contents import Report


def frontier_plot(task: str, points: dict[str, list[FrontierRow]], baselines: set[str]) -> bytes:
    """System output tok/s against per-user tok/s: every cell a marker (closed loop ●, open loop ▲), one line per
    method through its frontier (the cells no other of its cells beats on both); baselines dashed; a flagged
    point (queueing, Little's law) hollow."""
    fig, ax = plt.subplots(figsize=(7, 4.5))
    palette = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (method, pts) in enumerate(points.items()):
        pts = sorted((p for p in pts if p["per_user_tok_s"] and p["system_tok_s"]), key=lambda p: p["per_user_tok_s"])
        if not pts:
            continue
        color = "black" if method in baselines else palette[i % len(palette)]
        front = [p for p in pts if p["on_frontier"]]  # the line: the method's Pareto frontier
        ax.plot(
            [p["per_user_tok_s"] for p in front],
            [p["system_tok_s"] for p in front],
            color=color,
            linewidth=1,
            linestyle="--" if method in baselines else "-",
            label=method,
        )
        for p in pts:
            ax.plot(
                [p["per_user_tok_s"]],
                [p["system_tok_s"]],
                "^" if p["load"] == "rate" else "o",
                color=color,
                markersize=7,
                markerfacecolor="white" if p["flags"] else color,
            )
            ax.annotate(
                p["offered"],
                (p["per_user_tok_s"], p["system_tok_s"]),
                fontsize=6,
                color=color,
                xytext=(3, 3),
                textcoords="offset points",
            )
    ax.set_title(f"{task}: system vs per-user speed (● concurrency, ▲ rate; hollow = flagged)", fontsize=9)
    basis = next((p["per_user_basis"] for pts in points.values() for p in pts), "TPOT")
    ax.set_xlabel("per-user output tok/s (" + ("1000 / TPOT p50)" if basis == "TPOT" else "tokens / E2EL p50)"))
    ax.set_ylabel("system output tok/s")
    if ax.lines:
        ax.legend(fontsize=7)
    return png_bytes(fig)


def make_plots(rep: Report) -> None:
    for t in rep.run.tasks:
        series = speedup_series(rep.rates, t, "request_rate")
        if series:
            name = f"{REPORT_DIR}/speedup_vs_rate_{safe_name(t)}.png"
            rep.plots[name] = speedup_vs_concurrency(t, series, xlabel="offered rate (requests/s, open loop)")
            rep.plot_captions[name] = speedup_caption(f"offered rate, {t}", series)
        points: dict[str, list[FrontierRow]] = {}
        for p in (p for p in rep.frontier if p["task"] == t):
            points.setdefault(p["method"], []).append(p)
        if any(p["per_user_tok_s"] for pts in points.values() for p in pts) and rep.rates:
            name = f"{REPORT_DIR}/frontier_{safe_name(t)}.png"
            baselines = {p["method"] for pts in points.values() for p in pts if p["role"] != "spec"}
            rep.plots[name] = frontier_plot(t, points, baselines)
            rep.plot_captions[name] = (
                f"Per-user vs system output speed, {t}: every cell of every method (medians "
                "over repeats), labelled with its load; up and to the right is better; "
                "dashed = a baseline"
            )


def _bracket(r: CapacityRow) -> str:
    high = r["capacity_speedup_high"]
    if r["capacity_speedup"] is None:
        return "—" if not r["baseline"] else "n/a"
    top = "∞" if high is None or math.isinf(high) else f"{high:.2f}"
    return f"{times(r['capacity_speedup'])} [{r['capacity_speedup_low']:.2f}–{top}]"


def _rate_table(rep: Report, task: str) -> list[Block]:
    rows = [r for r in rep.rates if r["task"] == task]
    if not rows:
        return []
    return [
        ("h3", f"{task}: speed against the baseline per offered rate (open loop)"),
        (
            "table",
            [
                "method",
                "vs",
                "offered req/s",
                "served req/s",
                "N",
                "out tok/s",
                "throughput × [95 % CI]",
                "latency × [95 % CI]",
                "basis",
                "TTFT p50 ms",
                "verdict",
                "note",
            ],
            [
                [
                    _label(r),
                    r["baseline"] or "—",
                    f"{r['request_rate']:g}",
                    num(r["request_throughput"]),
                    r["repeats"],
                    num(r["output_throughput"], 1),
                    "—"
                    if r["role"] != "spec"
                    else times(r["throughput_speedup"])
                    + interval(r["throughput_speedup_low"], r["throughput_speedup_high"])
                    + marks.suffix(r, throughput=True),
                    "—"
                    if r["role"] != "spec"
                    else times(r["latency_speedup"])
                    + interval(r["latency_speedup_low"], r["latency_speedup_high"])
                    + marks.suffix(r),
                    r["latency_basis"],
                    num(r["ttft_p50_ms"], 1),
                    r["verdict"],
                    r["note"] or "",
                ]
                for r in rows
            ],
        ),
    ]


def load_section(rep: Report) -> list[Block]:
    if not rep.rates and not rep.capacity:
        return []
    out: list[Block] = [("h2", "Load"), ("p", _how_offered(rep))]
    for task in rep.run.tasks:
        out += _rate_table(rep, task)
        cross = [r for r in rep.rate_crossover if r["task"] == task]
        if cross:
            out += [
                ("h3", f"{task}: crossover in offered rate"),
                (
                    "table",
                    ["method", "vs", "throughput", "latency"],
                    [[_label(r), r["baseline"], r["throughput_text"], r["latency_text"]] for r in cross],
                ),
            ]
        out += [
            ("img", n, c)
            for n, c in rep.plot_captions.items()
            if n.startswith(f"{REPORT_DIR}/speedup_vs_rate_{safe_name(task)}.")
        ]
        out += _capacity(rep, task) + _frontier(rep, task)
    out.append(("ul", _definitions()))
    return out


def _how_offered(rep: Report) -> str:
    how = sorted(
        {
            entry.rates_from or "--rates"
            for md in rep.run.methods.values()
            for entry in md.record.load_figures.task_loads.values()
        }
    )
    burst = {b for md in rep.run.methods.values() if (b := md.record.load_figures.burstiness) is not None}
    shape = ", ".join("Poisson arrivals" if b == 1 else f"Gamma arrivals, burstiness {b:g}" for b in sorted(burst))
    caps = {c for md in rep.run.methods.values() if (c := md.record.load_figures.max_concurrency) is not None}
    cap = (
        f"at most {', '.join(str(c) for c in sorted(caps))} requests in flight (--rates-max-concurrency)"
        if caps
        else "no cap on requests in flight"
    )
    return (
        f"Open-loop cells: requests arrive at the offered rate ({shape or 'Poisson arrivals'}) with {cap}, the "
        f"same number of prompts and cross-checks as every bench cell. Rates: {'; '.join(how) or 'n/a'}."
    )


def _capacity(rep: Report, task: str) -> list[Block]:
    rows = [r for r in rep.capacity if r["task"] == task]
    if not rows:
        return []
    r0 = rows[0]
    slo = ", ".join(f"{k} ≤ {v:g} ms" for k, v in json.loads(r0["slo"] or "{}").items())
    return [
        ("h3", f"{task}: capacity at the SLO (≥ {r0['share']:.0%} of requests meeting {slo})"),
        (
            "table",
            ["method", "vs", "capacity req/s", "fails at req/s", "probes", "capacity × [bracket]", "result"],
            [
                [
                    _label(r),
                    r["baseline"] or "—",
                    num(r["capacity_req_s"]),
                    num(r["fails_at_req_s"]),
                    r["probes"],
                    _bracket(r),
                    r["text"],
                ]
                for r in rows
            ],
        ),
    ]


def _frontier(rep: Report, task: str) -> list[Block]:
    rows = [r for r in rep.frontier if r["task"] == task]
    if not rows or not rep.rates:
        return []
    return [
        ("h3", f"{task}: per-user vs system speed"),
        (
            "table",
            [
                "method",
                "load",
                "per-user tok/s",
                "basis",
                "system tok/s",
                "on frontier",
                "mean in flight",
                "system × at equal per-user speed",
                "flags",
            ],
            [
                [
                    _label(r),
                    r["offered"],
                    num(r["per_user_tok_s"], 1),
                    r["per_user_basis"] or "n/a",
                    num(r["system_tok_s"], 1),
                    num(r["on_frontier"]),
                    num(r["mean_in_flight"]),
                    "—" if r["role"] != "spec" else times(r["system_at_equal_per_user"]),
                    r["flags"] or "",
                ]
                for r in rows
            ],
        ),
        *_equal_speed(rows),
        *[
            ("img", n, c)
            for n, c in rep.plot_captions.items()
            if n.startswith(f"{REPORT_DIR}/frontier_{safe_name(task)}.")
        ],
    ]


def _equal_speed(rows: list[FrontierRow]) -> list[Block]:
    """One line per speculative method: its frontier's system throughput against the baseline's at equal
    per-user speed, point by point (only where the baseline's frontier reaches that speed)."""
    lines = []
    for method in dict.fromkeys(r["method"] for r in rows if r["role"] == "spec"):
        pts = [r for r in rows if r["method"] == method and r["on_frontier"]]
        said = [
            f"{times(r['system_at_equal_per_user'])} at {r['per_user_tok_s']:.0f} tok/s per user ({r['offered']})"
            for r in pts
            if r["system_at_equal_per_user"] is not None
        ]
        lines.append(
            f"{_label(pts[0]) if pts else method}: system throughput at equal per-user speed "
            f"{'; '.join(said) if said else 'n/a (its frontier lies outside the baseline measured range)'}"
        )
    return (
        [("p", "System throughput at equal per-user speed (vs the baseline's frontier):"), ("ul", lines)]
        if lines
        else []
    )


def _definitions() -> list[str]:
    return [
        "Open loop: bench sends requests at the offered rate whatever the server does (--request-rate, no "
        "--max-concurrency); served req/s below the offered rate means a queue grew. Speedups per rate are as "
        "per concurrency: method ÷ baseline at the same offered rate, medians over repeats.",
        "Capacity at the SLO: the highest rate whose share of requests meeting every --slo target (median over "
        "repeats) is at least the asked share, bisected between the highest passing and the lowest failing rate "
        "until they are within the stated resolution or the probes run out. It is a bracket: the capacity lies "
        "between the passing and the failing rate, so the ratio's bracket is [method pass ÷ baseline fail, method "
        "fail ÷ baseline pass].",
        "Per-user tok/s = 1000 ÷ TPOT p50 (basis TPOT); on a task where any cell's TPOT is degenerate (answers "
        "read in a burst), the answer's tokens ÷ E2EL p50 for every cell of the task (basis E2EL, TTFT included; "
        "ITL cannot stand in: a speculative step streams its accepted tokens as one chunk). System tok/s = bench's "
        "output throughput. System × at equal per-user speed = the method's system tok/s ÷ the baseline's "
        "frontier interpolated at the method's per-user speed; n/a outside the baseline's measured range.",
        f"Flags: queueing = TTFT p50 above {TTFT_QUEUE_FACTOR:g}× that of the method's lowest-load cell on the task "
        "(named; its smallest concurrency, else its lowest rate); slow at the lowest load = that cell's own TTFT p50 "
        f"above {TTFT_QUEUE_FACTOR:g}× a higher-load cell's (nothing queues at c=1: a stall or a warm-up); Little's law = mean in flight (served req/s × mean E2EL) off the concurrency by more than "
        f"{LITTLE_TOLERANCE:.0%} (closed loop), or served req/s more than {LITTLE_TOLERANCE:.0%} below the offered "
        "rate (open loop). A flagged point measures queueing or ramp effects as much as decoding.",
    ]
