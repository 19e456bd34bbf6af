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


def _coverage(interval, trials: int = 400, n: int = 3, sd: float = 0.05) -> float:
    """How often one more log-normal draw of num/den lands inside interval(num, den) built from n draws a side."""
    import numpy as np

    rng = np.random.default_rng(7)
    hits = 0
    for _ in range(trials):
        num, den = np.exp(rng.normal(0.7, sd, n)), np.exp(rng.normal(0.0, sd, n))
        low, high = interval(list(num), list(den))
        new = float(np.exp(rng.normal(0.7, sd)) / np.exp(rng.normal(0.0, sd)))
        hits += low <= new <= high
    return hits / trials


def test_a_prediction_interval_holds_one_more_run_19_times_in_20_where_the_median_s_interval_holds_two_in_three():
    assert 0.92 <= _coverage(st.prediction_ratio) <= 0.99  # 0.98 here: the df rounded down is a little wide
    by_median = _coverage(
        lambda a, b: (st.bootstrap_ratio(a, b, resamples=2000).low, st.bootstrap_ratio(a, b, resamples=2000).high)
    )
    assert 0.5 <= by_median <= 0.8  # 0.66 here: the confidence interval of the median is no yardstick for a new run


def test_session_pairs_predict_on_the_log_ratio_of_each_pair():
    # a drift that moves both sides of a session alike leaves each pair's ratio, and so the interval, narrow
    pairs = [(200.0, 100.0), (300.0, 151.0), (400.0, 199.0)]
    low, high = st.prediction_ratio(pairs=pairs)
    assert 1.9 < low < 2.0 < high < 2.1
    independent = st.prediction_ratio([p[0] for p in pairs], [p[1] for p in pairs])
    assert independent is not None and independent[0] < 1.0 and independent[1] > 4.0


def test_no_prediction_under_three_or_from_a_value_that_is_not_positive():
    assert st.prediction_ratio([2.0, 2.1], [1.0, 1.1, 1.2]) is None
    assert st.prediction_ratio(pairs=[(2.0, 1.0), (2.1, 1.0)]) is None
    assert st.prediction_ratio([2.0, 0.0, 2.1], [1.0, 1.1, 1.2]) is None
    assert st.t975(2) == 4.303 and st.t975(2.9) == 4.303 and st.t975(500) == 2.042 and st.t975(0.4) == 12.706
