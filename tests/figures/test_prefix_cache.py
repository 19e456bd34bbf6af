"""Prefix-cache figures (figures/prefix_cache.py): the hit rate = Δ hits / Δ queries of constructed counter deltas,
and several windows pooled, never averaged."""

from __future__ import annotations

import pytest

from specstack.config import metric_names as m
from specstack.figures import prefix_cache

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    "counters,expected",
    [
        ({m.PREFIX_CACHE_QUERIES: 400.0, m.PREFIX_CACHE_HITS: 96.0}, {"queries": 400, "hits": 96, "hit_rate": 0.24}),
        ({m.PREFIX_CACHE_QUERIES: 0.0, m.PREFIX_CACHE_HITS: 0.0}, {"queries": 0, "hits": 0, "hit_rate": None}),
        ({m.GENERATION_TOKENS: 5.0}, {"queries": None, "hits": None, "hit_rate": None}),
        (None, {"queries": None, "hits": None, "hit_rate": None}),
    ],
)
def test_hit_rate_is_delta_hits_over_delta_queries(counters, expected):
    assert prefix_cache.figures(counters) == expected


def test_repeats_are_pooled_not_averaged():
    parts = [
        {"queries": 100, "hits": 100, "hit_rate": 1.0},
        {"queries": 300, "hits": 0, "hit_rate": 0.0},
        {"queries": None, "hits": None, "hit_rate": None},
    ]
    assert prefix_cache.pooled(parts) == {"queries": 400, "hits": 100, "hit_rate": 0.25}
    assert prefix_cache.pooled(parts[2:])["hit_rate"] is None
