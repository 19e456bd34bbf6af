"""The speed section's "cost of drafting per target pass": per speculative row, the free-drafting TPOT, the time a
target pass took and what speculating cost beyond a plain decode step (figures/drafting_cost.py), so a method
slower than its acceptance promises says by how much each pass paid ("drafting costs 2.8 ms a pass")."""

from __future__ import annotations

from typing import TYPE_CHECKING

from specstack.figures import drafting_cost as dc
from specstack.report.format import num, pct
from specstack.report.render import Block
from specstack.report.rows import SpeedRow
from specstack.report.verdicts import label

if TYPE_CHECKING:
    from specstack.report.contents import Report

FIELDS = ("free_drafting_tpot_ms", "pass_ms", "drafting_cost_ms_per_pass", "drafting_cost_share")


def add_to_row(row: SpeedRow) -> None:
    """The row's drafting-cost fields, from its own TPOT p50, its baseline's and its tokens per target pass (the
    medians over repeats the speed table shows); None where a TPOT is degenerate (no per-token time) or the row
    is a baseline's."""
    usable = row["role"] == "spec" and not row.get("tpot_degenerate")
    tpot, base, bound = (
        (row.get("tpot_p50_ms"), row.get("baseline_tpot_p50_ms"), row.get("tokens_per_target_pass"))
        if usable
        else (None, None, None)
    )
    row["free_drafting_tpot_ms"] = dc.free_drafting_tpot_ms(base, bound)
    row["pass_ms"] = dc.pass_ms(tpot, bound)
    row["drafting_cost_ms_per_pass"] = dc.cost_per_pass_ms(tpot, base, bound)
    cost = row["drafting_cost_ms_per_pass"]
    row["drafting_cost_share"] = cost / base if cost is not None and base else None


def drafting_cost_table(rep: Report, task: str) -> list[Block]:
    """One line per speculative row with a cost: what a free drafter would give and what each pass paid."""
    rows = [r for r in rep.speed if r["task"] == task and r.get("drafting_cost_ms_per_pass") is not None]
    if not rows:
        return []
    return [
        ("h3", "Cost of drafting per target pass (perf phase)"),
        (
            "table",
            [
                "method",
                "c",
                "TPOT p50 ms",
                "baseline TPOT p50 ms",
                "tokens per target pass (drafting steps)",
                "TPOT with free drafting ms",
                "one target pass ms",
                "drafting cost per pass ms",
                "of a plain decode step",
            ],
            [
                [
                    label(r),
                    r["concurrency"],
                    num(r["tpot_p50_ms"]),
                    num(r["baseline_tpot_p50_ms"]),
                    num(r["tokens_per_target_pass"])
                    + ("" if r.get("drafting_share") is None else f" ({pct(r['drafting_share'], 0)})"),
                    num(r["free_drafting_tpot_ms"]),
                    num(r["pass_ms"]),
                    num(r["drafting_cost_ms_per_pass"]),
                    pct(r["drafting_cost_share"], 0),
                ]
                for r in rows
            ],
        ),
        (
            "p",
            "With tokens per target pass B, a method whose drafting cost nothing and whose verify pass cost one "
            "plain decode step would decode at the baseline's TPOT ÷ B (TPOT with free drafting). Its measured "
            "TPOT × B is what one of its target passes took; minus the baseline's TPOT, that is what "
            "speculating cost per pass: proposing the draft, verifying K + 1 positions instead of one, the "
            "bookkeeping. " + "; ".join(_sentence(r) for r in rows) + ".",
        ),
    ]


def _sentence(r: SpeedRow) -> str:
    cost = r["drafting_cost_ms_per_pass"]
    what = "drafting costs" if cost >= 0 else "a pass is cheaper than a plain step by"
    return (
        f"{label(r)} at c={r['concurrency']}: {what} {num(abs(cost))} ms a pass on this target "
        f"({pct(abs(r['drafting_cost_share']), 0)} of a plain decode step)"
    )
