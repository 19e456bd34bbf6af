"""The report's bounds and gates on constructed data whose right answer is known."""

from __future__ import annotations

import pytest

from specstack.figures import stats as st

pytestmark = pytest.mark.unit


def test_a_drafter_proposing_on_half_the_steps_is_bound_by_tokens_per_pass():
    # 4 answers of 101 tokens: 400 decode tokens from 200 target passes, 100 of which verified a draft and
    # accepted 2 of it. Per verify step that looks like 3 tokens; per pass it is 2.
    decode, drafts, accepted = 400, 100, 200
    assert st.target_passes(decode, drafts, accepted) == 200
    assert st.tokens_per_pass(decode, drafts, accepted) == pytest.approx(2.0)
    assert st.drafting_share(decode, drafts, accepted) == pytest.approx(0.5)
    mean_acceptance_length = 1 + accepted / drafts
    assert mean_acceptance_length == pytest.approx(3.0)
    # a measured TPOT speedup of 1.5x is 75 % of what a free drafter could give, not 50 %
    assert st.efficiency(1.5, st.tokens_per_pass(decode, drafts, accepted)) == pytest.approx(0.75)
    assert st.efficiency(1.5, mean_acceptance_length) == pytest.approx(0.5)


def test_a_drafter_on_every_step_has_both_bounds_equal():
    # 100 passes, each verifying a draft and accepting 3: 400 tokens, bound = mean acceptance length = 4
    assert st.tokens_per_pass(400, 100, 300) == pytest.approx(4.0) == 1 + 300 / 100
    assert st.drafting_share(400, 100, 300) == pytest.approx(1.0)


def test_drafts_accepted_past_max_tokens_do_not_shrink_the_passes_below_the_verify_steps():
    # every one of 100 passes drafted; vLLM counted 310 accepted, 10 of them past max_tokens and never emitted
    assert st.target_passes(400, 100, 310) == 100
    assert st.tokens_per_pass(400, 100, 310) == pytest.approx(4.0)


def test_plain_decode_is_one_token_per_pass_and_nothing_is_n_a():
    assert st.tokens_per_pass(400, None, None) == pytest.approx(1.0)
    assert st.drafting_share(400, None, None) == 0.0
    assert st.tokens_per_pass(None, 10, 20) is None and st.tokens_per_pass(0, 0, 0) is None
    assert st.efficiency(None, 2.0) is None and st.efficiency(1.5, None) is None


def test_no_interval_under_three_repeats():
    two = st.bootstrap_ratio([10.0, 11.0], [5.0, 5.5])
    assert two.point == pytest.approx(2.0) and not two.has_interval
    assert two.verdict() == f"no interval (2 repeats; needs ≥ {st.MIN_REPEATS})"
    assert st.bootstrap_ratio([10.0, 11.0, 9.0], [5.0, 5.5, 4.5]).has_interval
    assert not st.paired_bootstrap_ratio([(10.0, 5.0), (11.0, 5.5)]).has_interval


def test_paired_sessions_keep_a_drift_that_hit_both_sides_out_of_the_interval():
    # The machine slows down session after session; within each session pair the method is 1.25x faster.
    base = [10.0, 14.0, 18.0, 22.0, 26.0]
    method = [b / 1.25 for b in base]
    paired = st.paired_bootstrap_ratio(list(zip(base, method)))
    assert paired.point == pytest.approx(1.25)
    assert paired.low == pytest.approx(1.25) and paired.high == pytest.approx(1.25)
    # resampled as if unrelated, the drift swamps the difference
    independent = st.bootstrap_ratio(base, method)
    assert independent.point == pytest.approx(1.25) and independent.crosses_one


def test_relative_spread_gate():
    assert st.relative_mad([10.0, 10.0, 10.0]) == 0.0
    assert st.relative_mad([10.0, 11.0, 9.0, 30.0]) == pytest.approx(1.0 / 10.5)  # one outlier barely moves it
    assert st.relative_mad([10.0]) is None
    assert st.stability([10.0, 10.2, 9.9], [5.0, 5.1, 4.9]) == "stable"
    assert st.stability([10.0, 14.0, 8.0], [5.0, 5.1, 4.9]) == "unstable"  # MAD 2 / median 10 = 20 %
    assert st.stability([10.0], [5.0, 5.1, 4.9]) == "single"


def test_crossover_judges_every_cell_of_a_row_by_one_test():
    # c=1 has an interval (its low is below 1), c=4 has none: both are judged by their point estimates
    out = st.crossover({1: 1.3, 4: 0.9}, {1: 0.95, 4: None})
    assert out["by"] == "point" and out["kind"] == "crossover" and "by point estimates" in out["text"]
    out = st.crossover({1: 1.3, 4: 0.9}, {1: 0.95, 4: 0.8})
    assert out["by"] == "interval" and out["kind"] == "never" and "clearly" in out["text"]
