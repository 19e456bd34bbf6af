"""The probe's statistics, standard library only: chi-square goodness of fit with its worst-case power against
a total-variation alternative, and a two-sided binomial z-test of a rate with its power.

Why these: the probe knows the exact distribution and the exact acceptance rate it should see, so one-sample
tests apply, and its samples are large (thousands per test), where the chi-square and normal approximations hold.
Power against TV δ is worst case over every alternative: by Cauchy-Schwarz, (Σ|p'−p|)² ≤ Σ(p'−p)²/p, so an
alternative at TV δ has chi-square divergence ≥ 4δ² and the statistic's noncentrality is ≥ 4nδ².
"""

from __future__ import annotations

import math
from typing import Any

_EPS = 1e-15


def _gamma_p_series(a: float, x: float) -> float:
    term = total = 1.0 / a
    n = a
    for _ in range(10000):
        n += 1.0
        term *= x / n
        total += term
        if abs(term) < abs(total) * _EPS:
            break
    return total * math.exp(-x + a * math.log(x) - math.lgamma(a))


def _gamma_q_fraction(a: float, x: float) -> float:
    """Lentz's continued fraction for Q(a, x), x ≥ a + 1."""
    tiny = 1e-300
    b = x + 1.0 - a
    c, d = 1.0 / tiny, 1.0 / b
    h = d
    for i in range(1, 10000):
        an = -i * (i - a)
        b += 2.0
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < _EPS:
            break
    return math.exp(-x + a * math.log(x) - math.lgamma(a)) * h


def gamma_q(a: float, x: float) -> float:
    """Regularized upper incomplete gamma Q(a, x)."""
    if x <= 0:
        return 1.0
    if x < a + 1.0:
        return max(0.0, 1.0 - _gamma_p_series(a, x))
    return _gamma_q_fraction(a, x)


def chi2_sf(x: float, df: int) -> float:
    """P(χ²_df > x)."""
    return gamma_q(df / 2.0, x / 2.0)


def chi2_isf(p: float, df: int) -> float:
    """The x with P(χ²_df > x) = p (bisection: the sf is monotone)."""
    lo, hi = 0.0, max(10.0, df + 50.0 * math.sqrt(2.0 * df) + 50.0)
    while chi2_sf(hi, df) > p:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if chi2_sf(mid, df) > p:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def noncentral_chi2_sf(x: float, df: int, nc: float) -> float:
    """P(χ²_df(nc) > x): the Poisson(nc/2) mixture of central chi-squares."""
    if nc <= 0:
        return chi2_sf(x, df)
    half = nc / 2.0
    centre = int(half)
    total = 0.0
    # sum outward from the Poisson mode until the weights are negligible
    for k in list(range(centre, -1, -1)) + list(range(centre + 1, centre + 100000)):
        w = math.exp(-half + k * math.log(half) - math.lgamma(k + 1))
        if k > centre and w < 1e-17:
            break
        if k < centre and w < 1e-17:
            continue
        total += w * chi2_sf(x, df + 2 * k)
    return min(1.0, total)


def normal_sf(z: float) -> float:
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def normal_isf(p: float) -> float:
    lo, hi = -40.0, 40.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if normal_sf(mid) > p:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


MIN_EXPECTED = 10.0  # cells expected fewer times are pooled: the chi-square tail is trusted far out only then


def pool_small_cells(counts: list[int], probs: list[float], n: int) -> tuple[list[int], list[float]]:
    """Merge the least likely categories (of positive probability) into one cell until every cell is expected
    at least MIN_EXPECTED times (or one cell is left)."""
    cells = sorted(((p, c) for c, p in zip(counts, probs) if p > 0), reverse=True)
    kept, pooled_p, pooled_c = [], 0.0, 0
    for p, c in cells:
        kept.append((p, c))
    while len(kept) > 1 and (kept[-1][0] * n < MIN_EXPECTED or 0 < pooled_p * n < MIN_EXPECTED):
        p, c = kept.pop()
        pooled_p, pooled_c = pooled_p + p, pooled_c + c
    if pooled_p > 0:
        kept.append((pooled_p, pooled_c))
    return [c for _, c in kept], [p for p, _ in kept]


def chi2_goodness_of_fit(counts: list[int], probs: list[float], *, alpha: float, tv: float) -> dict[str, Any]:
    """Observed counts against exact category probabilities. A count in a category of probability 0 is an
    impossible token: p = 0 outright. Cells expected fewer than MIN_EXPECTED times are pooled. Returns the
    statistic, df, p, and the test's power at `alpha` against the worst alternative at total variation `tv`
    over the cells tested (the pooled cell counts as one)."""
    n = sum(counts)
    impossible = sum(c for c, p in zip(counts, probs) if p <= 0)
    cells, cell_p = pool_small_cells(counts, probs, n)
    df = max(1, len(cells) - 1)
    crit = chi2_isf(alpha, df)
    power = noncentral_chi2_sf(crit, df, 4.0 * n * tv * tv) if len(cells) > 1 else 1.0
    out = {"n": n, "df": df, "cells": len(cells), "critical": crit, "power": power, "impossible": impossible}
    if n == 0:
        return {**out, "statistic": 0.0, "p": 1.0}
    if impossible:
        return {**out, "statistic": math.inf, "p": 0.0}
    if len(cells) == 1:
        return {**out, "statistic": 0.0, "p": 1.0}
    stat = sum((c - n * p) ** 2 / (n * p) for c, p in zip(cells, cell_p))
    return {**out, "statistic": stat, "p": chi2_sf(stat, df)}


def rate_z_test(successes: int, n: int, rate: float, *, alpha: float, delta: float) -> dict[str, Any]:
    """Two-sided z-test of successes/n against the exact `rate`, and its power at `alpha` against a true rate
    `delta` away (the nearer side, the variance under the alternative)."""
    if n == 0:
        return {"n": 0, "observed": None, "z": 0.0, "p": 1.0, "power": 0.0}
    observed = successes / n
    if rate <= 0.0 or rate >= 1.0:  # a sure event: any exception is a failure
        ok = observed == rate
        return {"n": n, "observed": observed, "z": 0.0 if ok else math.inf, "p": 1.0 if ok else 0.0, "power": 1.0}
    sd = math.sqrt(rate * (1.0 - rate) / n)
    z = (observed - rate) / sd
    crit = normal_isf(alpha / 2.0)
    powers = []
    for alt in (rate - delta, rate + delta):
        if not 0.0 < alt < 1.0:
            powers.append(1.0)
            continue
        sd_alt = math.sqrt(alt * (1.0 - alt) / n)
        hi, lo = rate + crit * sd, rate - crit * sd
        powers.append(normal_sf((hi - alt) / sd_alt) + 1.0 - normal_sf((lo - alt) / sd_alt))
    return {"n": n, "observed": observed, "z": z, "p": min(1.0, 2.0 * normal_sf(abs(z))), "power": min(powers)}
