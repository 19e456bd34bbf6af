"""The report's acceptance blocks of one task: greedy acceptance, then split by category and by turn, and when
sampling; each cell marked where the method's summary.json disagreed on it (report/findings.py)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from specstack.report import findings
from specstack.report.acceptance import answers_by_target, finish_by_target, pooled
from specstack.report.format import num, pct
from specstack.report.render import Block
from specstack.report.rows import AcceptanceRow, SampledRow
from specstack.report.verdicts import label as _label

if TYPE_CHECKING:
    from specstack.report.contents import Report

# mark(figure, text): a cell as it is, or flagged where summary.json disagreed on that figure (_marker)
Mark = Callable[[str, str], str]


def _distinct(requests: int | None, distinct: int | None) -> str:
    return num(requests) + ("" if distinct is None else f" ({distinct} distinct)")


def _finish_label(rows: list[AcceptanceRow]) -> str:
    """The phase named by how its answers actually ended, not by what it allowed; per target model when the task
    ran on more than one (their answers are not the same answers)."""
    items = [(r.get("target") or "n/a", json.loads(r["finish_reasons"] or "{}")) for r in rows]
    by_target, answers = finish_by_target(items), answers_by_target(items)
    if len(by_target) > 1:
        return "; ".join(f"target {t}: {_ended(c, answers.get(t, []))}" for t, c in by_target.items())
    return next((_ended(c, answers.get(t, [])) for t, c in by_target.items()), "no answers")


def _ended(counts: dict[str, int], per_method: list[int]) -> str:
    total = sum(counts.values())
    if not total:
        return "no answers"
    how = f" ({pooled(per_method)})" if len(per_method) > 1 else ""
    if counts.get("stop") == total:
        return "every answer ended at EOS" + how
    if counts.get("length") == total:
        return "every answer hit max_tokens, none stopped on its own" + how
    return "answers ended by " + ", ".join(f"{reason} {n} of {total}" for reason, n in sorted(counts.items())) + how


def _rates(text: str | None, missing: str) -> str:
    if text is None:
        return missing
    return ", ".join("—" if x is None else f"{x:.2f}" for x in json.loads(text))


# r: an acceptance, category, turn or sampled row (their window columns are the same; positions: the first two's)
def _acceptance_cells(mark: Mark, r: Mapping[str, Any], positions: bool = True) -> list[str]:
    """rate, length, no-accept share, histogram, both per-position rates (positions=True), steps, drafts,
    accepted; each marked where summary.json disagreed on it (_marker)."""
    per_position = (
        [
            mark("per_position", _rates(r["per_position"], "n/a")),
            mark(
                "per_position_conditional",
                _rates(
                    r["per_position_conditional"],
                    "n/a" if r["per_position"] is None else "n/a (summary-level metrics: no per-step arrays)",
                ),
            ),
        ]
        if positions
        else []
    )
    return [
        mark("acceptance_rate", pct(r["acceptance_rate"])),
        mark("mean_acceptance_length", num(r["mean_acceptance_length"])),
        mark("no_accept_share", pct(r["no_accept_share"])),
        mark("histogram", r["histogram"] or "n/a"),
        *per_position,
        mark("num_spec_steps", num(r["num_spec_steps"])),
        mark("num_draft_tokens", num(r["num_draft_tokens"])),
        mark("num_accepted_draft_tokens", num(r["num_accepted_draft_tokens"])),
    ]


def _marker(rep: Report, r: Mapping[str, Any], phase: str) -> Mark:
    """mark(figure, text): the cell as it is, or flagged where the method's summary.json disagreed on that figure
    of that phase (report/findings.py; "missing" where it cannot be recomputed)."""
    md = rep.run.methods.get(r["method"])

    def mark(figure: str, text: str) -> str:
        return findings.cell(text, md.finding(r["task"], figure, phase) if md else None)

    return mark


def acceptance_table(rep: Report, task: str) -> list[Block]:
    out: list[Block] = []
    acc = [r for r in rep.acceptance if r["task"] == task]
    out.append(("h3", f"Acceptance (acceptance phase, greedy; {_finish_label(acc)})"))
    out.append(
        (
            "table",
            [
                "method",
                "K",
                "acceptance rate",
                "mean acc. length",
                "no-accept steps",
                "histogram (steps accepting j=0..K)",
                "per position, share of all drafting steps (≥ p+1 accepted / steps)",
                "per position, conditional (≥ p+1 accepted / steps drafting ≥ p+1)",
                "steps",
                "drafts",
                "accepted",
                "requests (distinct answers)",
                "failed req.",
                "finish reasons",
            ],
            [
                [
                    _label(r),
                    num(r["k"]),
                    *_acceptance_cells(_marker(rep, r, "greedy"), r),
                    _distinct(r["requests"], r.get("distinct_outputs")),
                    num(r["failed_requests"]),
                    r["finish_reasons"],
                ]
                for r in acc
            ],
        )
    )
    out.append(
        (
            "p",
            "Distinct answers: how many different greedy answers the task's requests produced, the "
            "effective sample behind each acceptance figure (requests that repeat one answer repeat its "
            "drafting steps too).",
        )
    )
    past = [r for r in acc if r.get("accepted_past_end")]
    if past:
        out.append(
            (
                "p",
                "Drafts accepted past the end: vLLM counts every draft of the last step as accepted even "
                "where the answer ended inside it (max_tokens, EOS), though those tokens were never "
                "emitted; the figures above include them, as vLLM's counters do. At least "
                + ", ".join(f"{r['method']} {r['accepted_past_end']}" for r in past)
                + " (per request: 1 + steps + accepted − completion tokens, where positive).",
            )
        )
    return out


def category_table(rep: Report, task: str) -> list[Block]:
    """Greedy acceptance per dataset category: the acceptance window split by request (exact)."""
    rows = [r for r in rep.categories if r["task"] == task and r["phase"] == "greedy"]
    if not rows:
        return []
    return [
        ("h3", "Acceptance by category (acceptance phase, greedy)"),
        (
            "table",
            [
                "method",
                "K",
                "category",
                "requests",
                "acceptance rate",
                "mean acc. length",
                "no-accept steps",
                "histogram (steps accepting j=0..K)",
                "per position, share of all drafting steps",
                "per position, conditional",
                "steps",
                "drafts",
                "accepted",
            ],
            [
                [
                    _label(r),
                    num(r["k"]),
                    r["category"],
                    num(r["requests"]),
                    *_acceptance_cells(_marker(rep, r, f"greedy · {r['category']}"), r),
                ]
                for r in rows
            ],
        ),
        (
            "p",
            "One acceptance window, split by request: each request's own metrics go to its category, so the "
            "categories' steps, drafts, accepted tokens and per-position counts sum to the task's, which "
            'equal the window\'s counter deltas (the checks named "Σ_category …" in the summary). Ratios '
            "are taken after summing within a category; n/a = no drafts, not 0 %. Sampled phases are split "
            "the same way in tables/acceptance_by_category.csv.",
        ),
    ]


def turn_table(rep: Report, task: str) -> list[Block]:
    """Greedy acceptance per turn (--turns 2): turn 2 carries the baseline's turn-1 answer, for every method."""
    rows = [r for r in rep.turns if r["task"] == task]
    if not rows:
        return []
    left_out = max(r["left_out"] or 0 for r in rows if r["turn"] == 2)
    return [
        ("h3", "Acceptance per turn (acceptance phase, greedy)"),
        (
            "table",
            [
                "method",
                "K",
                "turn",
                "requests",
                "acceptance rate",
                "mean acc. length",
                "no-accept steps",
                "histogram (steps accepting j=0..K)",
                "steps",
                "drafts",
                "accepted",
                "window",
            ],
            [
                [
                    _label(r),
                    num(r["k"]),
                    r["turn"],
                    num(r["requests"]),
                    *_window_cells(_marker(rep, r, "turn2" if r["turn"] == 2 else "greedy"), r),
                    r["status"],
                ]
                for r in rows
            ],
        ),
        (
            "p",
            f"Turn 2 is the chat [turn 1, the baseline's greedy answer, turn 2], byte-identical for every method "
            f"(inputs/{task}.turn2.<baseline>.jsonl, sha256 in the manifest); {left_out} row(s) without a second "
            "turn are left out of it. Its own window, checked against the counters like turn 1; per category "
            "in tables/acceptance_by_category.csv (phase turn2).",
        ),
    ]


def sampled_table(rep: Report, task: str) -> list[Block]:
    """Acceptance when sampling (--temperatures): the same prompts, request i seeded 42+i for every method."""
    rows = [r for r in rep.sampled if r["task"] == task and r["k"] is not None]  # methods that draft
    if not rows:
        return []
    return [
        ("h3", "Acceptance when sampling (same prompts; request i seeded 42+i for every method)"),
        (
            "table",
            [
                "method",
                "K",
                "temperature",
                "acceptance rate",
                "greedy",
                "mean acc. length",
                "greedy",
                "no-accept steps",
                "histogram (steps accepting j=0..K)",
                "steps",
                "drafts",
                "accepted",
                "window",
            ],
            [[_label(r), num(r["k"]), f"{r['temperature']:g}", *_sampled_cells(rep, r), r["status"]] for r in rows],
        ),
    ]


def _window_cells(mark: Mark, r: Mapping[str, Any]) -> list[str]:
    """rate, length, no-accept share, histogram, steps, drafts, accepted (a turn's or a sampled phase's)."""
    return _acceptance_cells(mark, r, positions=False)


def _sampled_cells(rep: Report, r: SampledRow) -> list[str]:
    """The sampled phase's figures, each beside the greedy one where the table has it."""
    mark, greedy = _marker(rep, r, f"t{r['temperature']:g}"), _marker(rep, r, "greedy")
    rate, length, *rest = _window_cells(mark, r)
    return [
        rate,
        greedy("acceptance_rate", pct(r["greedy_acceptance_rate"])),
        length,
        greedy("mean_acceptance_length", num(r["greedy_mean_acceptance_length"])),
        *rest,
    ]
