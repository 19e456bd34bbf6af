"""The report's bounds and gates on constructed data whose right answer is known."""
from __future__ import annotations

import pytest

from specstack.report import stats as st

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
