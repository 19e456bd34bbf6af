"""Repetition loops as a validity guard per method × task (issue #41 point 9): where a drafting method's acceptance
answers loop, every place a reader looks for the task's acceptance says so (a ⚠ paragraph under the task, a line
in the Verdict section, a mark on the console's task heading), with the acceptance with and without the loops.
The rows are report/loops.py's `loop_rows`; the loop rule is figures/loops.py's."""

from __future__ import annotations

from typing import TYPE_CHECKING

from specstack.report.format import pct
from specstack.report.render import Block
from specstack.report.rows import LoopRow

if TYPE_CHECKING:
    from specstack.report.contents import Report

FIX = (
    "read the acceptance without loops; a target that ends its answers (EOS) or a lower "
    "--acceptance-max-tokens leaves fewer of them"
)


def looping(rows: list[LoopRow], task: str) -> list[LoopRow]:
    """The task's rows whose method drafted and whose answers looped (a baseline's loops bias no acceptance)."""
    return [r for r in rows if r["task"] == task and r["loops"] and r["acceptance_rate"] is not None]


def loop_line(r: LoopRow, bracketed: bool = False) -> str:
    """ "ngram: 2 of 8 answers loop; acceptance 37.3 % with them, 27.3 % without" (bracketed: the acceptance in
    brackets, for a list of methods joined by semicolons)."""
    figures = f"acceptance {pct(r['acceptance_rate'])} with them, {pct(r['acceptance_rate_without_loops'])} without"
    return f"{r['label']}: {r['loops']} of {r['requests']} answers loop" + (
        f" ({figures})" if bracketed else f"; {figures}"
    )


def loop_marks(rows: list[LoopRow], task: str) -> str:
    """The console's task heading mark: one ⚠ per method whose answers looped ("" when none did)."""
    return "".join(f" ⚠ {loop_line(r, bracketed=True)}" for r in looping(rows, task))


def verdict_lines(rep: Report) -> list[Block]:
    """Above the verdict matrix: each method × task whose acceptance rests partly on looping answers."""
    lines = [f"{task}: ⚠ {loop_line(r)}" for task in rep.run.tasks for r in looping(rep.loops, task)]
    return (
        [
            (
                "p",
                "**Repetition loops in the acceptance answers** (a loop is its own best draft for a drafter that "
                "copies from the context, so the acceptance with them can read high; fix: "
                f"{FIX}; each task's section names the requests):",
            ),
            ("ul", lines),
        ]
        if lines
        else []
    )


def loop_notes(rep: Report, task: str) -> list[Block]:
    """Under the task's heading: the methods whose answers looped, with both acceptance figures (nothing when
    none did)."""
    rows = looping(rep.loops, task)
    if not rows:
        return []
    return [
        (
            "p",
            "⚠ **Repetition loops.** "
            + "; ".join(loop_line(r, bracketed=True) for r in rows)
            + ". A looping answer is its own best draft for a drafter that copies from the context (ngram and "
            "suffix accept nearly every token of it), so the acceptance with them can say more than drafting "
            "did on the rest of the task; the figure without them is the acceptance on the answers that did not "
            f'loop. Fix: {FIX}. The "Repetition loops" table below names the requests.',
        )
    ]
