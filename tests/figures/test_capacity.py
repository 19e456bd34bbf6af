"""The capacity search (figures/capacity.py) on fake probes: a server whose SLO share falls past a known rate. The
search must bracket that rate within the stated resolution, never spend more probes than allowed, and say so
when a method never meets the SLO or meets it everywhere."""

from __future__ import annotations

import math

import pytest

from specstack.figures import capacity

pytestmark = pytest.mark.unit


def fake_server(true_capacity: float):
    """A probe: passes at and below the true capacity; records every rate it was asked."""
    asked = []

    def probe(rate: float) -> bool:
        asked.append(rate)
        return rate <= true_capacity

    return probe, asked


@pytest.mark.parametrize("true_capacity", [1.3, 2.0, 3.7])
def test_the_bracket_holds_the_true_capacity_within_the_resolution(true_capacity):
    probe, asked = fake_server(true_capacity)
    tested = {r: r <= true_capacity for r in (1.0, 2.0, 4.0)}
    out = capacity.search(probe, tested, max_probes=6, resolution=0.1)
    assert out["kind"] == "found" and out["rate"] <= true_capacity < out["bound"]
    assert out["bound"] <= out["rate"] * 1.1
    assert [p["rate"] for p in out["probes"]] == asked and len(asked) <= 6
    assert all(p["passed"] == (p["rate"] <= true_capacity) for p in out["probes"])


def test_the_probe_budget_is_never_exceeded_and_an_unresolved_bracket_says_so():
    probe, asked = fake_server(1.37)
    out = capacity.search(probe, {1.0: True, 4.0: False}, max_probes=2, resolution=0.01)
    assert len(asked) == 2 and out["kind"] == "unresolved"
    assert out["rate"] <= 1.37 < out["bound"] and "probes ran out" in out["text"]


def test_a_method_that_never_meets_the_slo_says_so():
    probe, asked = fake_server(0.0)  # fails at every rate
    out = capacity.search(probe, {0.5: False, 1.0: False}, max_probes=3, resolution=0.1)
    assert out["kind"] == "never" and out["rate"] is None and out["bound"] == min([0.5, *asked])
    assert asked == [0.25, 0.125, 0.0625] and "never meets the SLO" in out["text"]


def test_no_failing_rate_doubles_upward_and_reports_a_lower_bound_when_probes_run_out():
    probe, asked = fake_server(100.0)
    out = capacity.search(probe, {1.0: True, 2.0: True}, max_probes=2, resolution=0.1)
    assert asked == [4.0, 8.0] and out["kind"] == "at least" and out["rate"] == 8.0 and out["bound"] is None
    assert "at least 8 req/s" in out["text"]


def test_a_pass_above_a_failure_does_not_raise_the_capacity():
    assert capacity.bracket({1.0: True, 2.0: False, 3.0: True}) == (1.0, 2.0)


def test_zero_probes_judges_the_tested_rates_only():
    probe, asked = fake_server(1.5)
    out = capacity.search(probe, {1.0: True, 2.0: False}, max_probes=0, resolution=0.1)
    assert asked == [] and (out["rate"], out["bound"], out["kind"]) == (1.0, 2.0, "unresolved")


def test_a_rate_passes_on_the_median_share_of_its_repeats_and_a_missing_figure_fails_it():
    assert capacity.passes([0.95, 0.5, 0.92], 0.9)
    assert not capacity.passes([0.95, 0.5, 0.6], 0.9)
    assert not capacity.passes([0.95, None, 1.0], 0.9) and not capacity.passes([], 0.9)


def test_the_capacity_ratio_interval_follows_both_brackets():
    r = capacity.ratio({"rate": 2.0, "bound": 2.2}, {"rate": 1.0, "bound": 1.1})
    assert r["point"] == 2.0 and r["low"] == pytest.approx(2.0 / 1.1) and r["high"] == pytest.approx(2.2)
    open_top = capacity.ratio({"rate": 2.0, "bound": None}, {"rate": 1.0, "bound": 1.1})
    assert math.isinf(open_top["high"])
    assert capacity.ratio({"rate": None, "bound": 0.5}, {"rate": 1.0, "bound": 1.1}) is None
