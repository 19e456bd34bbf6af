"""Repetition loops in the acceptance phase's greedy answers (figures/loops.py): per method × task how many answers
looped and which, and the task's acceptance with and without those requests. A looping answer is its own best
draft, so it inflates ngram's and suffix's acceptance; the figure without it says what drafting did on the rest."""

from __future__ import annotations

from typing import TYPE_CHECKING

from specstack.figures.loops import MAX_PERIOD, MIN_RUN, acceptance_without, loop_of
from specstack.report.acceptance import acceptance_records
from specstack.report.format import num, pct
from specstack.report.render import Block
from specstack.report.rows import LoopRow
from specstack.report.verdicts import label
from specstack.results.reader import RunData

if TYPE_CHECKING:
    from specstack.report.contents import Report

COLUMNS = [
    "method",
    "label",
    "task",
    "comparable",
    "server_contradicted",
    "requests",
    "loops",
    "unknown",
    "loop_ids",
    "acceptance_rate",
    "mean_acceptance_length",
    "requests_without_loops",
    "acceptance_rate_without_loops",
    "mean_acceptance_length_without_loops",
    "num_draft_tokens_without_loops",
    "num_accepted_draft_tokens_without_loops",
    "num_spec_steps_without_loops",
]


def loop_rows(run: RunData) -> list[LoopRow]:
    """One row per method × task: loops among the method's own answers (each judged on its own tokens, since a
    method drafts on what it generates), acceptance over every request and over the requests that did not loop.
    `unknown`: answers without token ids (the rule needs them)."""
    rows: list[LoopRow] = []
    for md in run.methods.values():
        for task in run.tasks:
            records = [r for r in acceptance_records(md, task) if not r["error"]]
            if not records:
                continue
            verdicts = {r["id"]: loop_of(r) for r in records}
            looped = [i for i, v in verdicts.items() if v["loop"]]
            every, rest = acceptance_without(records, set()), acceptance_without(records, set(looped))
            rows.append(
                {
                    "method": md.name,
                    "label": md.display_name,
                    "task": task,
                    "comparable": md.comparable,
                    "server_contradicted": bool(md.server_contradictions),
                    "requests": len(records),
                    "loops": len(looped),
                    "unknown": sum(v["loop"] is None for v in verdicts.values()),
                    "loop_ids": " ".join(
                        f"{i} (period {verdicts[i]['period']}, last {verdicts[i]['run']} tokens)" for i in looped
                    )
                    or None,
                    "acceptance_rate": every["acceptance_rate"],
                    "mean_acceptance_length": every["mean_acceptance_length"],
                    "requests_without_loops": rest["requests"],
                    "acceptance_rate_without_loops": rest["acceptance_rate"],
                    "mean_acceptance_length_without_loops": rest["mean_acceptance_length"],
                    "num_draft_tokens_without_loops": rest["num_draft_tokens"],
                    "num_accepted_draft_tokens_without_loops": rest["num_accepted_draft_tokens"],
                    "num_spec_steps_without_loops": rest["num_spec_steps"],
                }
            )
    return rows


def loop_table(rep: Report, task: str) -> list[Block]:
    """The task's repetition loops and its acceptance without them (nothing when no method's answer looped)."""
    rows = [r for r in rep.loops if r["task"] == task]
    if not any(r["loops"] for r in rows):
        return []
    return [
        ("h3", "Repetition loops (acceptance phase, greedy)"),
        (
            "table",
            [
                "method",
                "answers",
                "repetition loops",
                "acceptance rate (all / without loops)",
                "mean acc. length (all / without loops)",
                "requests that looped",
            ],
            [
                [
                    label(r),
                    num(r["requests"]),
                    num(r["loops"]) + (f" ({r['unknown']} unknown)" if r["unknown"] else ""),
                    f"{pct(r['acceptance_rate'])} / {pct(r['acceptance_rate_without_loops'])}",
                    f"{num(r['mean_acceptance_length'])} / {num(r['mean_acceptance_length_without_loops'])}",
                    r["loop_ids"] or "—",
                ]
                for r in rows
            ],
        ),
        (
            "p",
            "A repetition loop: the answer ran to max_tokens and ends in a run of tokens repeating with a period "
            f"of 1 to {MAX_PERIOD} tokens (each token of the run equals the one a period before), at least two "
            f'whole periods and {MIN_RUN} tokens long ("1.1.1.1…", one sentence again and again). Judged on '
            "each method's own answer tokens. A loop is its own best draft, so it inflates ngram's and "
            "suffix's acceptance; without loops = the same sums (accepted ÷ drafted, 1 + accepted ÷ steps, "
            "from each request's own metrics) over the requests that did not loop.",
        ),
    ]
