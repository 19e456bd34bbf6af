"""Acceptance arithmetic and the cross-check identities."""

import pytest

from specstack.measure.accounting import (
    Acceptance,
    crosscheck_bench,
    crosscheck_bench_answers,
    crosscheck_requests,
    from_requests,
    positions_from_histogram,
)

pytestmark = pytest.mark.unit


def spec(hist, drafts_per_step):
    steps = sum(hist)
    accepted = sum(j * n for j, n in enumerate(hist))
    return {
        "num_spec_steps": steps,
        "num_draft_tokens": steps * drafts_per_step,
        "num_accepted_draft_tokens": accepted,
        "acceptance_histogram": hist,
        "mean_acceptance_length": 1 + accepted / steps if steps else 1.0,
        "draft_acceptance_rate": accepted / (steps * drafts_per_step) if steps else 0.0,
    }


def test_sums_numerators_and_denominators_first():
    # Two requests: 4/4 accepted on a short one, 0/40 on a long one. Mean of rates would say 50 %.
    total = from_requests([spec([0, 0, 0, 0, 1], 4), spec([10, 0, 0, 0, 0], 4)])
    assert total.accepted == 4 and total.draft_tokens == 44 and total.steps == 11
    assert total.acceptance_rate == 4 / 44
    assert total.mean_acceptance_length == 1 + 4 / 11
    assert total.histogram == [10, 0, 0, 0, 1]
    assert total.no_accept_share == 10 / 11


def test_no_drafts_is_none_not_zero():
    # vLLM reports draft_acceptance_rate 0.0 for a request without spec steps; we must not.
    total = from_requests([spec([0, 0, 0, 0, 0], 4)])
    assert total.acceptance_rate is None
    assert total.mean_acceptance_length is None
    assert total.per_position_rates is None


def test_baseline_has_no_acceptance():
    assert from_requests([None, None]) is None
    assert crosscheck_requests(None, None) == []


def test_positions_from_histogram():
    assert positions_from_histogram([3, 2, 1, 4]) == [7, 5, 4]
    assert sum(positions_from_histogram([3, 2, 1, 4])) == 2 * 1 + 1 * 2 + 4 * 3


def test_crosscheck_passes_when_counters_equal_sums():
    req = from_requests([spec([1, 2, 0, 1], 3), spec([0, 1, 1, 0], 3)])
    counted = Acceptance(
        steps=req.steps,
        draft_tokens=req.draft_tokens,
        accepted=req.accepted,
        per_position=positions_from_histogram(req.histogram),
    )
    checks = crosscheck_requests(req, counted)
    assert all(c.ok for c in checks) and len(checks) == 4 + 3


def test_crosscheck_reports_both_numbers_on_mismatch():
    req = from_requests([spec([1, 2, 0, 1], 3)])
    counted = Acceptance(
        steps=req.steps + 2,
        draft_tokens=req.draft_tokens + 6,
        accepted=req.accepted,
        per_position=positions_from_histogram(req.histogram),
    )
    bad = [c for c in crosscheck_requests(req, counted) if not c.ok]
    assert [c.name for c in bad] == ["Σ num_spec_steps = Δ num_drafts", "Σ num_draft_tokens = Δ num_draft_tokens"]
    assert bad[0].expected == 4 and bad[0].actual == 6 and "warm-ups" in bad[0].hint


def test_crosscheck_flags_missing_side():
    req = from_requests([spec([1, 0], 1)])
    assert not crosscheck_requests(req, None)[0].ok
    assert not crosscheck_requests(None, Acceptance(steps=1, draft_tokens=1))[0].ok


def test_bench_fields_against_counters():
    counted = Acceptance(steps=10, draft_tokens=30, accepted=12, per_position=[7, 4, 1])
    bench = {
        "spec_decode_num_drafts": 10,
        "spec_decode_draft_tokens": 30,
        "spec_decode_accepted_tokens": 12,
        "spec_decode_per_position_acceptance_rates": [0.7, 0.4, 0.1],
        "spec_decode_acceptance_rate": 40.0,
    }
    assert all(c.ok for c in crosscheck_bench(bench, counted))
    bench["spec_decode_accepted_tokens"] = 11
    assert [c.name for c in crosscheck_bench(bench, counted) if not c.ok] == [
        "bench spec_decode_accepted_tokens = Δ num_accepted_tokens"
    ]


def test_bench_without_spec_fields_means_no_drafts():
    assert crosscheck_bench({}, Acceptance())[0].ok
    assert not crosscheck_bench({}, Acceptance(steps=1, draft_tokens=3))[0].ok
    assert crosscheck_bench({}, None) == []


def test_bench_answers_complete_at_full_length():
    bench = {"completed": 4, "failed": 0, "total_output_tokens": 256}
    assert all(c.ok for c in crosscheck_bench_answers(bench, finished=4, generated=256, output_len=64))


def test_a_cut_answer_bench_counted_as_success_is_caught():
    # bench counts a stream cut after its first chunk as completed: its total falls short, and vLLM, which
    # never finished that request, counted 3 finished requests and fewer generated tokens
    bench = {"completed": 4, "failed": 0, "total_output_tokens": 64 * 3 + 10}
    bad = [c for c in crosscheck_bench_answers(bench, finished=3, generated=64 * 3 + 12, output_len=64) if not c.ok]
    assert [c.name for c in bad] == [
        "bench completed = Δ vllm:request_success",
        "bench total_output_tokens = completed × 64",
        "bench completed × 64 = Δ vllm:generation_tokens",
    ]
    assert (bad[0].expected, bad[0].actual) == (4, 3) and (bad[1].expected, bad[1].actual) == (202, 256)
    assert all("cut short" in c.hint for c in bad)


def test_bench_answers_without_a_fixed_length_check_only_finished_requests():
    checks = crosscheck_bench_answers(
        {"completed": 2, "total_output_tokens": 77}, finished=2, generated=77, output_len=None
    )
    assert [(c.name, c.ok) for c in checks] == [("bench completed = Δ vllm:request_success", True)]


def detailed(drafted: list[int], accepted: list[int], k: int = 4) -> dict:
    """A `detailed` per-request payload built from its per-step arrays, as vLLM 0.32.0 builds it."""
    hist = [0] * (k + 1)
    for a in accepted:
        hist[a] += 1
    out = spec(hist, 1)
    out.update(
        num_draft_tokens=sum(drafted),
        draft_acceptance_rate=sum(accepted) / sum(drafted),
        per_step_drafted=drafted,
        per_step_accepted=accepted,
    )
    return out


def test_conditional_rate_divides_by_the_steps_that_drafted_that_far():
    # A variable-length drafter: 4 steps, drafting 1, 1, 4, 2 tokens and accepting all but the 4-token draft's last.
    total = from_requests([detailed([1, 1, 4, 2], [1, 1, 3, 2])])
    assert total.per_position == [4, 2, 1, 0]  # steps accepting >= p+1
    assert total.drafted_per_position == [4, 2, 1, 1]  # steps drafting >= p+1
    # vLLM's convention (share of all drafting steps) vs the conditional one
    assert total.per_position_rates == [1.0, 0.5, 0.25, 0.0]
    assert total.per_position_conditional_rates == [1.0, 1.0, 1.0, 0.0]


def test_conditional_rate_is_none_where_nothing_was_drafted_that_far_and_without_arrays():
    total = from_requests([detailed([2, 1], [1, 0])])
    assert total.per_position_conditional_rates == [0.5, 0.0, None, None]
    mixed = from_requests([detailed([2, 1], [1, 0]), spec([1, 1, 0, 0, 0], 2)])  # one request at summary level
    assert mixed.drafted_per_position is None and mixed.per_position_conditional_rates is None
    assert from_requests([spec([1, 1, 0, 0, 0], 2)]).per_position_conditional_rates is None
    # a request on which nothing was drafted carries no arrays at the detailed level either (vLLM omits empty ones)
    quiet = from_requests([detailed([2, 1], [1, 0]), spec([0, 0, 0, 0, 0], 4)])
    assert quiet.per_position_conditional_rates == [0.5, 0.0, None, None]


def test_per_step_arrays_are_crosschecked_against_the_counters():
    req = from_requests([detailed([1, 1, 4, 2], [1, 1, 3, 2]), detailed([3, 3], [0, 3])])
    counted = Acceptance(
        steps=req.steps,
        draft_tokens=req.draft_tokens,
        accepted=req.accepted,
        per_position=positions_from_histogram(req.histogram),
    )
    checks = crosscheck_requests(req, counted)
    step_checks = [c for c in checks if "per_step" in c.name]
    assert len(step_checks) == 2 + 4 and all(c.ok for c in checks)
    # counters that saw a step the arrays did not (other traffic, or an array vLLM truncated)
    counted.steps += 1
    counted.draft_tokens += 2
    counted.accepted += 1
    counted.per_position[0] += 1
    bad = {c.name for c in crosscheck_requests(req, counted) if not c.ok}
    assert {
        "Σ len(per_step_drafted) = Δ num_drafts",
        "Σ per_step_drafted = Δ num_draft_tokens",
        "Δ accepted_per_pos[0] = Σ_steps [per_step_accepted > 0]",
    } <= bad
