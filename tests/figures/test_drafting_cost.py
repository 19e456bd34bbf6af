"""figures/drafting_cost.py: the free-drafting TPOT, one target pass and what speculating cost per pass."""

from __future__ import annotations

import pytest

from specstack.figures import drafting_cost as dc
from specstack.figures import stats as st

pytestmark = pytest.mark.unit


def test_the_cost_is_a_pass_minus_a_plain_decode_step():
    # ngram on chat, H200 (smol-h200, c=1): TPOT 5.01 ms against 2.73 ms, 1.36 tokens per target pass
    assert dc.free_drafting_tpot_ms(2.73, 1.36) == pytest.approx(2.73 / 1.36)
    assert dc.pass_ms(5.01, 1.36) == pytest.approx(5.01 * 1.36)
    assert dc.cost_per_pass_ms(5.01, 2.73, 1.36) == pytest.approx(5.01 * 1.36 - 2.73)


@pytest.mark.parametrize("tpot, base, bound", [(8.0, 10.0, 2.0), (5.01, 2.73, 1.36), (1.07, 2.87, 2.96)])
def test_it_agrees_with_the_efficiency(tpot, base, bound):
    """cost = baseline TPOT × (1 ÷ efficiency − 1): zero exactly when the TPOT speedup reaches the bound."""
    eff = st.efficiency(base / tpot, bound)
    assert dc.cost_per_pass_ms(tpot, base, bound) == pytest.approx(base * (1 / eff - 1))
    assert dc.cost_per_pass_ms(base / bound, base, bound) == pytest.approx(0.0)


@pytest.mark.parametrize("args", [(None, 2.0, 1.5), (2.0, None, 1.5), (2.0, 2.0, None), (2.0, 2.0, 0.0)])
def test_nothing_to_say_without_its_inputs(args):
    assert dc.cost_per_pass_ms(*args) is None
