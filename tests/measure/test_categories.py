"""Acceptance per dataset category: one window split exactly by request, checked against its counters."""

import pytest

from specstack.measure.accounting import Acceptance, from_requests
from specstack.measure.categories import NO_CATEGORY, CategorySums, crosscheck

pytestmark = pytest.mark.unit


def spec(hist, drafts_per_step):
    steps = sum(hist)
    return {
        "num_spec_steps": steps,
        "num_draft_tokens": steps * drafts_per_step,
        "num_accepted_draft_tokens": sum(j * n for j, n in enumerate(hist)),
        "acceptance_histogram": hist,
    }


# coding accepts almost everything, writing almost nothing: the per-category rates a task total hides
REQUESTS = [
    ("coding", spec([0, 0, 3], 2)),
    ("writing", spec([4, 0, 0], 2)),
    ("coding", spec([0, 1, 1], 2)),
    ("writing", spec([1, 1, 0], 2)),
]


def split(requests):
    sums = CategorySums()
    for category, s in requests:
        sums.add(category, s)
    return sums


def counters_of(requests) -> Acceptance:
    total = from_requests(s for _, s in requests)
    return Acceptance(
        steps=total.steps,
        draft_tokens=total.draft_tokens,
        accepted=total.accepted,
        per_position=list(total.per_position),
    )


def test_each_category_sums_its_own_requests_first():
    d = split(REQUESTS).to_dict()
    assert list(d) == ["coding", "writing"]  # order of first appearance
    coding, writing = d["coding"], d["writing"]
    assert coding["requests"] == 2 and coding["steps"] == 5 and coding["draft_tokens"] == 10
    assert coding["accepted"] == 9 and coding["acceptance_rate"] == 9 / 10
    assert coding["mean_acceptance_length"] == 1 + 9 / 5
    assert coding["histogram"] == [0, 1, 4] and coding["per_position"] == [5, 4]
    assert writing["accepted"] == 1 and writing["acceptance_rate"] == 1 / 12 and writing["histogram"] == [5, 1, 0]


def test_categories_sum_to_the_counters_exactly():
    checks = crosscheck(split(REQUESTS), counters_of(REQUESTS))
    assert [c.name for c in checks] == [
        "Σ_category num_spec_steps = Δ num_drafts",
        "Σ_category num_draft_tokens = Δ num_draft_tokens",
        "Σ_category num_accepted_draft_tokens = Δ num_accepted_tokens",
        "Σ_category accepted_per_pos = Δ accepted_per_pos",
    ]
    assert all(c.ok for c in checks)
    assert checks[2].expected == checks[2].actual == 10 and checks[3].actual == [6, 4]


def test_a_request_lost_from_the_split_is_a_mismatch():
    checks = crosscheck(split(REQUESTS[:-1]), counters_of(REQUESTS))
    failed = [c for c in checks if not c.ok]
    assert len(failed) == 4 and all("bug in the split" in c.hint for c in failed)
    assert (failed[0].expected, failed[0].actual) == (9, 11)


def test_tasks_without_categories_are_not_split():
    sums = split([(None, s) for _, s in REQUESTS])
    assert sums.to_dict() is None and crosscheck(sums, counters_of(REQUESTS)) == []


def test_rows_without_a_category_in_a_mixed_file_are_kept_apart():
    d = split([("coding", REQUESTS[0][1]), (None, REQUESTS[1][1])]).to_dict()
    assert d[NO_CATEGORY]["requests"] == 1 and d[NO_CATEGORY]["accepted"] == 0


def test_plain_decode_counts_requests_per_category_and_no_acceptance():
    d = split([("coding", None), ("coding", None), ("writing", None)]).to_dict()
    assert d == {"coding": {"requests": 2}, "writing": {"requests": 1}}
    assert crosscheck(split([("coding", None)]), None) == []
