"""The probe's statistics (probes/stats.py) against known values and their own definitions."""

import math
import random

import pytest

from specstack.probes.stats import (
    chi2_goodness_of_fit,
    chi2_isf,
    chi2_sf,
    noncentral_chi2_sf,
    normal_isf,
    pool_small_cells,
    rate_z_test,
)

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    "x, df, sf",
    [
        (3.841458820694124, 1, 0.05),
        (18.307038053275146, 10, 0.05),
        (6.634896601021214, 1, 0.01),
        (2.0, 2, math.exp(-1.0)),
        (40.0, 4, math.exp(-20.0) * (1 + 20.0)),
    ],
)
def test_chi2_sf_matches_closed_forms_and_tables(x, df, sf):
    assert chi2_sf(x, df) == pytest.approx(sf, rel=1e-9)


def test_isf_inverts_sf():
    for df in (1, 5, 11, 30):
        for p in (0.05, 1e-3, 1e-6):
            assert chi2_sf(chi2_isf(p, df), df) == pytest.approx(p, rel=1e-6)
    assert normal_isf(0.025) == pytest.approx(1.959963984540054, abs=1e-9)


def test_noncentral_reduces_to_central_and_grows_with_noncentrality():
    assert noncentral_chi2_sf(10.0, 5, 0.0) == pytest.approx(chi2_sf(10.0, 5))
    powers = [noncentral_chi2_sf(20.0, 5, nc) for nc in (1, 5, 20, 80)]
    assert powers == sorted(powers) and powers[-1] > 0.999


def test_noncentral_sf_agrees_with_simulation():
    """χ²_df(nc) as Σ (Z_i + μ_i)² with Σ μ_i² = nc: the mixture formula against 20 000 draws."""
    rng, df, nc, x = random.Random(3), 4, 9.0, 12.0
    mu = [math.sqrt(nc), 0.0, 0.0, 0.0]
    hits = sum(sum((rng.gauss(0, 1) + m) ** 2 for m in mu) > x for _ in range(20000))
    assert hits / 20000 == pytest.approx(noncentral_chi2_sf(x, df, nc), abs=0.015)


def test_chi2_gof_accepts_exact_counts_and_rejects_a_shift():
    probs = [0.5, 0.3, 0.2]
    assert chi2_goodness_of_fit([500, 300, 200], probs, alpha=1e-3, tv=0.1)["p"] == pytest.approx(1.0)
    shifted = chi2_goodness_of_fit([600, 250, 150], probs, alpha=1e-3, tv=0.1)
    assert shifted["p"] < 1e-6 and shifted["power"] > 0.99


def test_a_token_outside_the_support_fails_outright():
    r = chi2_goodness_of_fit([999, 1, 0], [0.6, 0.0, 0.4], alpha=1e-3, tv=0.1)
    assert r["p"] == 0.0 and r["impossible"] == 1


def test_small_cells_are_pooled_until_each_is_expected_ten_times():
    counts, probs = pool_small_cells([90, 5, 3, 1, 1], [0.9, 0.05, 0.03, 0.01, 0.01], 100)
    assert counts == [90, 10] and probs == pytest.approx([0.9, 0.1])
    assert all(p * 1000 >= 10 for p in pool_small_cells([1] * 4, [0.4, 0.3, 0.2, 0.1], 1000)[1])


def test_rate_z_test_and_its_power():
    assert rate_z_test(800, 1000, 0.8, alpha=1e-3, delta=0.05)["p"] == pytest.approx(1.0)
    assert rate_z_test(700, 1000, 0.8, alpha=1e-3, delta=0.05)["p"] < 1e-10
    weak, strong = (rate_z_test(0, n, 0.8, alpha=1e-3, delta=0.05)["power"] for n in (200, 5000))
    assert weak < 0.5 < 0.99 < strong
    assert rate_z_test(10, 10, 1.0, alpha=1e-3, delta=0.05)["p"] == 1.0
    assert rate_z_test(9, 10, 1.0, alpha=1e-3, delta=0.05)["p"] == 0.0
