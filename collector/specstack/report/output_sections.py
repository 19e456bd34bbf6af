"""The report's output blocks of one task: whether a method's outputs are the baseline's, greedy (equality, with
the log-prob gap at each divergence) and when sampling (the lossless test, report/lossless.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from specstack.figures.equality import NEAR_TIE_NATS, NUMERICS, numerics
from specstack.report.format import num, pct
from specstack.report.render import Block
from specstack.report.rows import EqualityRequestRow, EqualitySummaryRow
from specstack.report.verdicts import label as _label

if TYPE_CHECKING:
    from specstack.report.contents import Report


def lossless_table(rep: Report, task: str) -> list[Block]:
    """Whether each method's sampled outputs keep the baseline's distribution (report/lossless.py)."""
    rows = [r for r in rep.lossless if r["task"] == task]
    if not rows:
        return []
    return [
        ("h3", "Lossless when sampling? (first tokens of each prompt's samples against the baseline's)"),
        (
            "table",
            [
                "method",
                "vs",
                "temperature",
                "samples per prompt",
                "tests (prompt × position)",
                "smallest Holm p",
                "TV it could detect (median)",
                "engine sampler (probe)",
                "verdict",
            ],
            [
                [
                    _label(r),
                    r["baseline"],
                    f"{r['temperature']:g}",
                    num(r["samples_per_prompt"]),
                    num(r["tests"]),
                    "n/a" if r["min_p_holm"] is None else f"{r['min_p_holm']:.3g}",
                    "n/a" if r["detectable_tv"] is None else f"{r['detectable_tv']:.2f}",
                    r.get("engine_sampler", "n/a"),
                    r["verdict"],
                ]
                for r in rows
            ],
        ),
        (
            "p",
            f"Per prompt and each of the first {rows[0]['positions']} positions: a permutation test of the "
            "total variation distance between the method's and the baseline's token distributions, "
            'Holm-adjusted over all tests. "No evidence" is not proof: differences below the detectable '
            'TV pass unseen; more samples per prompt lower it. "engine sampler (probe)": what `specstack '
            "probe-sampler` said of the installed vLLM's rejection sampler where the method ran (biased: "
            "a flagged difference is the engine's, not the method's; docs/sampler-cpu-bug.md).",
        ),
    ]


def equality_tables(rep: Report, task: str) -> list[Block]:
    out: list[Block] = []
    eqs = [r for r in rep.equality_summary if r["task"] == task]
    if eqs:
        out.append(("h3", "Output equality against the baseline (acceptance phase only)"))
        out.append(
            (
                "table",
                [
                    "method",
                    "vs",
                    "compared",
                    "distinct answers (method / baseline)",
                    "equal",
                    "equal rate",
                    "finish_reason differs",
                    "first divergence (min / median)",
                    "near ties at the divergence",
                    "unit",
                    "note",
                ],
                [
                    [
                        _label(r),
                        r["baseline"],
                        r["compared"],
                        f"{num(r.get('distinct_outputs'), 0)} / {num(r.get('baseline_distinct_outputs'), 0)}",
                        r["equal"],
                        pct(r["equal_rate"]),
                        r["finish_reason_differs"],
                        f"{num(r.get('first_divergence_min'), 0)} / {num(r.get('first_divergence_median'), 1)}",
                        _near_ties(r),
                        r["unit"] or "n/a",
                        r["note"] or "",
                    ]
                    for r in eqs
                ],
            )
        )
        tok = sorted({r["tokenizer"] for r in eqs if r["tokenizer"]})
        if tok:  # which tokenizer the indices count in (--tokenizer, or the target the bundle recorded)
            out.append(("p", "Tokenizer: " + "; ".join(tok)))
        diffs = [r for r in rep.equality if r["task"] == task and r["equal"] is not True]
        if diffs:
            out.append(("p", "Requests whose output differs from the baseline's (all others are identical):"))
            out.append(
                (
                    "table",
                    [
                        "method",
                        "request id",
                        "first diverging index",
                        "unit",
                        "finish_reason (method / baseline)",
                        "completion tokens (method / baseline)",
                        "baseline's log-prob gap there (nats): consistent with",
                        "note",
                    ],
                    [
                        [
                            r["method"],
                            r["id"],
                            num(r["first_token_divergence" if r["unit"] == "token" else "first_char_divergence"], 0),
                            r["unit"],
                            f"{r['finish_reason']} / {r['baseline_finish_reason']}",
                            f"{num(r['completion_tokens'], 0)} / {num(r['baseline_completion_tokens'], 0)}",
                            _gap(r),
                            r["note"] or "",
                        ]
                        for r in diffs
                    ],
                )
            )
            out.append(("p", tie_note(eqs)))
    return out


def tie_note(eqs: list[EqualitySummaryRow]) -> str:
    """What the log-prob gap column means, at the resolution of the dtype(s) the task's baselines served in."""
    text = (
        "The baseline's log-prob gap: at the first token where the answers differ, the baseline's log-probability "
        "of its own token minus that of the method's (both from the baseline's top-2, recorded with its greedy "
        "answers). "
    )
    found = {numerics(r.get("dtype")) for r in eqs}
    if found == {NUMERICS["bfloat16"]}:
        return text + (
            "An exact tie (gap 0: the same bf16 logit) or a near tie (gap <= "
            f"{NEAR_TIE_NATS} nats, two bf16 steps of a logit between 16 and 32) flips when the target "
            "computes the same position in a batch of another shape, as a speculative verify step does "
            "(bf16 numerics, docs/greedy-divergence.md); a larger gap is not bf16 rounding but a change "
            "the method made."
        )
    bounds = "; ".join(f"{name} {bound:g} nats" for name, bound, _ in sorted(found))
    return text + (
        "An exact tie (gap 0: the same logit) or a near tie (a gap within the served dtype's bound: "
        f"{bounds}) flips when the target computes the same position in a batch of another shape, as a "
        "speculative verify step does (numerics, docs/greedy-divergence.md); a larger gap is not "
        "rounding but a change the method made."
    )


def _near_ties(r: EqualitySummaryRow) -> str:
    """How many of the divergences were near ties at the baseline ("n/a": no divergence, or no log-probs)."""
    diverged = r["compared"] - r["equal"]
    return "n/a" if not diverged or r.get("near_ties") is None else f"{r['near_ties']} of {diverged}"


def _gap(r: EqualityRequestRow) -> str:
    kind = r.get("divergence_kind")
    if kind is None:
        return "n/a"
    gap = r.get("divergence_gap_nats")
    # a gap under a thousandth of a nat (a float32 server's ties) in significant digits, not as "0.000"
    text = kind if gap is None else f"{gap:.2g} ({kind})" if 0 < abs(gap) < 5e-4 else f"{gap:.3f} ({kind})"
    return text + (f": {r['divergence_cause']}" if r.get("divergence_cause") else "")
