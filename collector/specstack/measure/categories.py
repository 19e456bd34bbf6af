"""Acceptance per category (a dataset's `category`: MT-Bench's writing, coding, …), split exactly from one
window's per-request metrics.

Why one window split by request, not a window per category: every request carries its own exact counts, so
the split needs no extra server state, the prompts run in the order they run without categories, and the
categories' sums are the task's sums by construction; those equal the counter deltas (the window's own
checks), and the checks below state it in the bundle. Rates are taken after summing within a category.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from specstack.measure import accounting
from specstack.measure.accounting import Acceptance, Check

NO_CATEGORY = "(no category)"  # rows of a mixed file without one


@dataclass
class CategorySums:
    """Running per-category sums over a window's requests, in the order categories first appear."""

    requests: dict[str, int] = field(default_factory=dict)
    acceptance: dict[str, Acceptance | None] = field(default_factory=dict)
    any_category: bool = False

    def add(self, category: str | None, spec: dict[str, Any] | None) -> None:
        self.any_category = self.any_category or category is not None
        key = NO_CATEGORY if category is None else str(category)
        self.requests[key] = self.requests.get(key, 0) + 1
        self.acceptance[key] = accounting.add_request(self.acceptance.get(key), spec)

    def to_dict(self) -> dict[str, Any] | None:
        """category -> {requests, and the Acceptance's figures (absent for a method that never drafted)};
        None when no request had a category (the built-in tasks)."""
        if not self.any_category:
            return None
        return {
            k: {"requests": n, **(a.to_dict() if (a := self.acceptance[k]) else {})} for k, n in self.requests.items()
        }


def _total(parts: list[Acceptance]) -> tuple[int, int, int, list[int]]:
    steps = sum(a.steps for a in parts)
    drafts = sum(a.draft_tokens for a in parts)
    accepted = sum(a.accepted for a in parts)
    k = max((len(a.per_position) for a in parts), default=0)
    positions = [sum(a.per_position[p] for a in parts if p < len(a.per_position)) for p in range(k)]
    return steps, drafts, accepted, positions


def crosscheck(sums: CategorySums, counters: Acceptance | None) -> list[Check]:
    """The categories' sums against the window's counter deltas: steps, drafts, accepted, each position."""
    parts = [a for a in sums.acceptance.values() if a is not None]
    if not sums.any_category or counters is None or not parts:
        return []
    steps, drafts, accepted, positions = _total(parts)
    k = max(len(positions), len(counters.per_position))
    positions = positions + [0] * (k - len(positions))
    counted = counters.per_position + [0] * (k - len(counters.per_position))
    checks = [
        Check("Σ_category num_spec_steps = Δ num_drafts", steps, counters.steps, steps == counters.steps),
        Check(
            "Σ_category num_draft_tokens = Δ num_draft_tokens",
            drafts,
            counters.draft_tokens,
            drafts == counters.draft_tokens,
        ),
        Check(
            "Σ_category num_accepted_draft_tokens = Δ num_accepted_tokens",
            accepted,
            counters.accepted,
            accepted == counters.accepted,
        ),
        Check("Σ_category accepted_per_pos = Δ accepted_per_pos", positions, counted, positions == counted),
    ]
    for c in checks:
        if not c.ok:
            c.hint = "a request counted in no category or in two: a bug in the split, not in the server"
    return checks
