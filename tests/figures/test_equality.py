"""figures/equality.py's rating of a greedy divergence by the baseline's own top log-probabilities."""
from __future__ import annotations

import pytest

from specstack.figures.equality import NEAR_TIE_NATS, divergence_at_baseline

pytestmark = pytest.mark.unit

BASE = [5, 6, 7, 8]
TOP = [[[5, -0.1], [9, -3.0]], [[6, -0.5], [1, -0.55]], [[7, -0.2], [2, -2.0]], [[8, -0.1], [3, -4.0]]]


@pytest.mark.parametrize("mine, index, gap, kind", [
    ([5, 1, 7], 1, 0.05, "near tie"),                                   # the runner-up, 0.05 nats behind
    ([5, 6, 2], 2, 1.8, "not a tie"),                                   # the runner-up, far behind
    ([5, 6, 7, 4], 3, None, "not a tie (outside the baseline's top 2)"),
    ([5, 6, 7, 8], None, None, None),                                   # equal
    ([5, 6], 2, None, None),                                            # one answer ended: nothing to rate
])
def test_divergence_is_rated_at_the_first_differing_token(mine, index, gap, kind):
    out = divergence_at_baseline(mine, BASE, TOP)
    assert out["token_index"] == index and out["kind"] == kind
    assert out["gap_nats"] == (None if gap is None else pytest.approx(gap))


def test_near_tie_bound_and_unknown_without_log_probs():
    assert divergence_at_baseline([6], [5], [[[5, -1.0], [6, -1.0 - 0.99 * NEAR_TIE_NATS]]])["kind"] == "near tie"
    assert divergence_at_baseline([6], [5], [[[5, -1.0], [6, -1.0 - 1.01 * NEAR_TIE_NATS]]])["kind"] == "not a tie"
    top = [[[5, -1.0], [6, -1.5]]]
    assert divergence_at_baseline([6], [5], None) == {"token_index": 0, "gap_nats": None, "kind": None}
    assert divergence_at_baseline(None, [5], top)["kind"] is None
    assert divergence_at_baseline([6], [5], [[[9, -0.1]]])["kind"] is None   # baseline's own token missing
