"""The comparison as blocks for report/render.py (Markdown and HTML from one list)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from specstack.compare.acceptance import moved
from specstack.compare.contents import Comparison, run_id
from specstack.compare.rows import CapacityRow, SpeedRow, SpeedupRow
from specstack.compare.speedups import summary
from specstack.figures import stats as st
from specstack.report import findings
from specstack.report import format as fmt
from specstack.report.render import Block

_ACCEPTANCE_FORMAT = {"acceptance_rate": fmt.pct, "acceptance_length": fmt.num, "per_position": fmt.pct}


def _signed_pct(v: float | None) -> str:
    return "n/a" if v is None else f"{100 * v:+.1f} %"


def _value(figure: str, v: float | None) -> str:
    if figure == "histogram":
        return fmt.num(v)
    if figure in _ACCEPTANCE_FORMAT:
        return _ACCEPTANCE_FORMAT[figure](v)
    return fmt.num(v)


def _side_value(r: Mapping[str, Any], side: str) -> str:  # a FigureRow, read by side
    """A side's figure: as recomputed, flagged where its summary.json disagreed; "missing" where it cannot be."""
    if side in (r.get("missing") or ""):
        return f"{findings.MISSING} {findings.FLAG}"
    text = _value(r["figure"], r[side.lower()])
    return f"{text} {findings.FLAG}" if side in (r.get("flagged") or "") else text


def _delta(r: Mapping[str, Any]) -> str:
    if r["delta"] is None:
        return "n/a"
    if r["figure"] == "histogram":
        return f"{r['delta']:+d}"
    if r["figure"] in ("acceptance_rate", "per_position"):
        return f"{100 * r['delta']:+.2f} pts"
    return f"{r['delta']:+.3f}"


def _acceptance_table(rows: Sequence[Mapping[str, Any]], label: str) -> list[Block]:
    # FigureRows, or AcceptanceRows with their request interval (compare/rows.py)
    if not rows:
        return []
    paired = "requests_paired" in rows[0]
    head = (
        ["method", "task", label, "A", "B", "Δ", "Δ %"]
        + (["B/A [95 % interval over requests]"] if paired else [])
        + ["verdict"]
    )
    body = [
        [
            r["label"],
            r["task"],
            r["figure"] if r["position"] is None else r["position"],
            _side_value(r, "A"),
            _side_value(r, "B"),
            _delta(r),
            _signed_pct(r["relative"]),
        ]
        + (
            [
                fmt.times(r["ratio"], 3)
                + fmt.interval(r["ratio_low"], r["ratio_high"])
                + f" ({r['requests_paired']} requests)"
            ]
            if paired
            else []
        )
        + [r["verdict"]]
        for r in rows
    ]
    return [("table", head, body)]


def _speed_table(rows: list[SpeedRow]) -> list[Block]:
    if not rows:
        return [("p", "No bench cell in both runs.")]
    head = [
        "method",
        "task",
        "c",
        "figure",
        "A (median)",
        "B (median)",
        "B/A [95 % interval]",
        "repeats A/B",
        "verdict",
        "note",
    ]
    body = [
        [
            r["label"],
            r["task"],
            r["concurrency"],
            r["figure"],
            fmt.num(r["a"]),
            fmt.num(r["b"]),
            fmt.times(r["ratio"], 3) + fmt.interval(r["ratio_low"], r["ratio_high"]),
            f"{r['repeats_a']}/{r['repeats_b']}",
            r["verdict"],
            r["note"] or "",
        ]
        for r in rows
    ]
    return [("table", head, body)]


def _speedups_table(rows: list[SpeedupRow]) -> list[Block]:
    if not rows:
        return [("p", "No speculative method has a bench cell in both runs.")]
    head = [
        "method",
        "task",
        "c",
        "speedup",
        "A [95 % confidence interval]",
        "A's 95 % prediction interval",
        "A's replication",
        "B",
        "verdict",
    ]
    body = [
        [
            r["label"],
            r["task"],
            r["concurrency"],
            r["figure"] + (f" ({r['basis']})" if r["basis"] else ""),
            fmt.times(r["a"], 3) + fmt.interval(r["a_low"], r["a_high"]),
            fmt.interval(r["a_predicted_low"], r["a_predicted_high"]).strip() or "n/a",
            r["design_a"],
            fmt.times(r["b"], 3) + fmt.interval(r["b_low"], r["b_high"]),
            r["verdict"],
        ]
        for r in rows
    ]
    out: list[Block] = []
    line = summary(rows)
    if line:
        out.append(("p", line))
    out.append(("table", head, body))
    return out


def _pairs(cmp: Comparison) -> list[Block]:
    body = []
    for p in cmp.pairs:
        diffs = (
            "; ".join(
                d.text() + (f" — rules out {', '.join(d.rules_out)}" if d.rules_out else "") for d in p.differences
            )
            or "nothing recorded differs"
        )
        body.append([p.label, p.task, diffs, ", ".join(p.unknown) or ""])
    out: list[Block] = (
        [("table", ["method", "task", "what differs (A → B)", "not recorded on a side"], body)]
        if body
        else [("p", "**No method × task is present in both runs**: nothing to compare.")]
    )
    if cmp.unmatched:
        out.append(("ul", cmp.unmatched))
    return out


def _gate(cmp: Comparison) -> list[Block]:
    if not cmp.thresholds:
        return [("p", "No --fail-on thresholds given: the exit status is 0 whatever changed.")]
    body = [
        [
            r["threshold"],
            r["figure"],
            _signed_pct(r["change"]),
            "" if r["low"] is None else f"[{100 * r['low']:+.1f} %, {100 * r['high']:+.1f} %]",
            r["basis"],
            "FAILED" if r["failed"] else "ok",
        ]
        for r in cmp.gate
    ]
    return [
        ("p", f"**{'FAILED' if cmp.failed else 'passed'}** (exit status {1 if cmp.failed else 0})."),
        ("table", ["threshold", "figure", "change", "95 % interval of the change", "decided by", "result"], body),
    ]


def _outputs(cmp: Comparison) -> list[Block]:
    if not cmp.outputs_summary:
        return [("p", "No pair to compare.")]
    head = ["method", "task", "requests A/B", "compared", "same", "first divergence (min)", "unit", "verdict"]
    body = [
        [
            s["label"],
            s["task"],
            f"{s['requests_a']}/{s['requests_b']}",
            s["compared"],
            s["same"],
            fmt.num(s["first_divergence_min"]),
            s["unit"],
            s["verdict"],
        ]
        for s in cmp.outputs_summary
    ]
    out: list[Block] = [("table", head, body)]
    tok = sorted({s["tokenizer"] for s in cmp.outputs_summary if s["tokenizer"]})
    if tok:
        out.append(("p", "Tokenizer: " + "; ".join(tok)))
    diverging = [r for r in cmp.outputs if r["same"] is False or r["note"]]
    if diverging:
        out.append(("h3", "Requests that differ or were not compared"))
        out.append(
            (
                "table",
                ["method", "task", "id", "first diverging token", "first diverging character", "finish A/B", "note"],
                [
                    [
                        r["method"],
                        r["task"],
                        r["id"],
                        fmt.num(r["first_token_divergence"]),
                        fmt.num(r["first_char_divergence"]),
                        f"{r['finish_reason_a']}/{r['finish_reason_b']}",
                        r["note"] or "",
                    ]
                    for r in diverging
                ],
            )
        )
    return out


def _grouped(cmp: Comparison) -> list[str]:
    """The changed figures, one line per method × task."""
    groups: dict[tuple[str, str], list[str]] = {}
    for r in cmp.acceptance + cmp.positions + cmp.histogram:
        if moved(r):
            name = r["figure"] if r["position"] is None else f"{r['figure']} {r['position']}"
            name += f" {_signed_pct(r['relative'])}" if r["relative"] is not None else ""
            groups.setdefault((r["label"], r["task"]), []).append(name)
    for sr in cmp.speed:
        if sr["verdict"].startswith("changed"):
            groups.setdefault((sr["label"], sr["task"]), []).append(
                f"c={sr['concurrency']} {sr['figure']} {_signed_pct(sr['relative'])} ({sr['verdict'][9:-1]})"
            )
    for s in cmp.outputs_summary:
        if s["verdict"].startswith("changed"):
            groups.setdefault((s["label"], s["task"]), []).append(f"greedy outputs {s['verdict'][8:]}")
    return [f"**{label} {task}**: " + ", ".join(items) for (label, task), items in groups.items()]


HOW_TO_READ = [
    "Δ % and B/A: B against A (B/A − 1). A figure is compared only where both runs have it.",
    "Acceptance phase (greedy, n=1): acceptance rate, mean acceptance length, per-position rates and the histogram "
    "are exact sums over the task's requests, not samples: **same** = the counts are identical, **changed** = "
    "any difference in them (its size is in Δ); the --fail-on gate reads the same verdict. Every figure and count "
    "is recomputed from the run's request records (else its summary's own sums): "
    f'{findings.FLAG} marks one its summary.json stated otherwise, "missing" one it lost beyond recomputing. '
    "Beside the rate and the length, B/A with a paired bootstrap interval over the requests answered on both "
    "sides: how far the choice of prompts alone could move it (it sizes a change; the verdict stays exact).",
    "Speedups: each side's method against the baseline of its own run (the report's throughput and latency "
    "speedups). A's has its 95 % confidence interval (of its median) and its 95 % prediction interval (where one "
    "more run would land, from A's repeats or session pairs, log-normal, Student's t); B's point is **inside**, "
    "**above** or **below** the prediction interval. It asks whether a quicker run reads what a replicated one "
    "measured: about 1 figure in 20 lands outside by chance alone, and repeats in one session leave the "
    "session-to-session variance out of A's interval (--replicate sessions keeps it in). A host slower for both "
    "methods alike moves no speedup, where it moves every raw figure of the speed table.",
    f"Bench cells: the median over repeats; B/A with a 95 % percentile-bootstrap interval over repeats when both "
    f"sides have ≥ {st.MIN_REPEATS}. **within noise**: the interval includes 1.0×; **changed (better|worse)**: it "
    "excludes it; **point only**: no interval. Repeats in one server session leave session-to-session variance "
    "out, so a small speed change between two runs can be a session effect; gate speed with a margin.",
    "**not comparable**: a fact the figure depends on differs: other inputs (sha256 in the manifest) or another "
    "target rule out every figure; another K the per-position rates and the histogram; other hardware the bench "
    "figures; synthetic rejection sampling the acceptance figures. Other vLLM versions, model runners or "
    "speculative settings are named in the pair table and compared: they are what a comparison usually asks about.",
    "Greedy outputs: request by request on the same id and prompt; the first diverging token in the target's "
    "tokenizer, or character where that tokenizer is not on this machine (pass --tokenizer PATH).",
    "Definitions: docs/compare.md.",
]


def _capacity_ratio(r: CapacityRow) -> str:
    if r["ratio"] is None:
        return "n/a"
    high = "∞" if r["ratio_high"] == float("inf") else f"{r['ratio_high']:.2f}"
    return f"{r['ratio']:.2f}× [{r['ratio_low']:.2f}–{high}]"


def blocks(cmp: Comparison) -> list[Block]:
    a, b = run_id(cmp.run_a), run_id(cmp.run_b)
    changed = cmp.changed()
    bl: list[Block] = [
        ("h1", f"Comparison: {a} (A) → {b} (B)"),
        (
            "p",
            f"A = {cmp.run_a.run_dir.name}/, B = {cmp.run_b.run_dir.name}/. "
            f"{len(cmp.pairs)} method × task pair(s) in both runs.",
        ),
    ]
    bl.append(("h2", "Summary"))
    bl.append(("p", f"**{len(changed)} figure(s) changed**" + (":" if changed else " (no change beyond noise).")))
    if changed:
        bl.append(("ul", _grouped(cmp)))
    line = summary(cmp.speedups, see="; the Speedups table below")
    if line:
        bl.append(("p", line))
    bl += findings.table(cmp.findings)  # a side's hand-edited summary.json: named, and its figures recomputed
    bl += [("h2", "Gate (--fail-on)"), *_gate(cmp)]
    bl += [("h2", "Pairs and what differs"), *_pairs(cmp)]
    bl += [("h2", "Acceptance (acceptance phase, exact sums)"), *_acceptance_table(cmp.acceptance, "figure")]
    if cmp.positions:
        bl += [
            ("h3", "Per draft position (steps accepting ≥ p+1 drafts ÷ drafting steps)"),
            *_acceptance_table(cmp.positions, "position"),
        ]
    if cmp.histogram:
        bl += [("h3", "Histogram (verify steps accepting exactly j drafts)"), *_acceptance_table(cmp.histogram, "j")]
    for name, caption in cmp.plot_captions.items():
        bl.append(("img", name, caption))
    bl += [("h2", "Speed (bench cells)"), *_speed_table(cmp.speed)]
    bl += [("h2", "Speedups over each run's own baseline: B against A's intervals"), *_speedups_table(cmp.speedups)]
    if cmp.capacity:
        bl += [
            ("h2", "Capacity at the SLO (open loop, --capacity)"),
            (
                "table",
                ["method", "task", "A", "B", "B / A [bracket]", "verdict"],
                [
                    [r["label"], r["task"], r["a"] or "—", r["b"] or "—", _capacity_ratio(r), r["verdict"]]
                    for r in cmp.capacity
                ],
            ),
        ]
    bl += [("h2", "Greedy outputs"), *_outputs(cmp)]
    bl += [("h2", "How to read this"), ("ul", HOW_TO_READ)]
    return bl
