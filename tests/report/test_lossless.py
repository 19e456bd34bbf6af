"""The losslessness test's statistics on samples the test draws itself: calibrated under the null, with power
against a changed distribution, Holm's adjustment, and the independent split of seed-paired samples."""

from __future__ import annotations

import numpy as np
import pytest

from specstack.report import lossless

pytestmark = pytest.mark.unit


def _draw(seed: int, probs, prompts=4, samples=64, positions=4):
    g = np.random.default_rng(seed)
    return {f"p{i}": [list(g.choice(len(probs), positions, p=probs)) for _ in range(samples)] for i in range(prompts)}


def _softmax(logits, t):
    e = np.exp(np.asarray(logits) / t)
    return e / e.sum()


LOGITS = np.random.default_rng(3).normal(size=20) * 1.5


def test_holm_adjusts_monotonically_and_caps_at_one():
    assert lossless.holm([0.01, 0.04, 0.03, 0.5]) == pytest.approx([0.04, 0.09, 0.09, 0.5])
    assert lossless.holm([0.5, 0.6]) == [1.0, 1.0]


def test_the_same_distribution_is_rarely_flagged():
    flagged = sum(
        lossless.compare_samples(_draw(100 + s, _softmax(LOGITS, 1.0)), _draw(900 + s, _softmax(LOGITS, 1.0)))[
            "flagged"
        ]
        > 0
        for s in range(20)
    )
    assert flagged <= 2  # family-wise α = 0.05 over 20 repetitions: 1 expected, more than 2 is miscalibration


def test_another_temperature_is_flagged_and_named():
    out = lossless.compare_samples(
        _draw(1, _softmax(LOGITS, 1.0), samples=128), _draw(2, _softmax(LOGITS, 0.4), samples=128)
    )
    assert out["flagged"] > 0 and out["verdict"].startswith("differs: prompt p")
    assert out["detectable_tv"] is not None and 0 < out["detectable_tv"] < 1


def test_more_samples_detect_smaller_differences():
    small = lossless.compare_samples(
        _draw(1, _softmax(LOGITS, 1.0), samples=32), _draw(2, _softmax(LOGITS, 1.0), samples=32)
    )
    large = lossless.compare_samples(
        _draw(1, _softmax(LOGITS, 1.0), samples=256), _draw(2, _softmax(LOGITS, 1.0), samples=256)
    )
    assert large["detectable_tv"] < small["detectable_tv"]


def test_too_few_samples_are_not_tested():
    out = lossless.compare_samples(
        _draw(1, _softmax(LOGITS, 1.0), samples=8), _draw(2, _softmax(LOGITS, 1.0), samples=8)
    )
    assert out["tests"] == [] and out["verdict"].startswith("not tested (needs ≥ 32 samples per prompt")


def test_seed_paired_samples_are_split_into_independent_halves():
    def rec(prompt, k, tokens):
        return {"id": f"{prompt}/s{k}", "error": None, "token_ids": tokens}

    a = [rec("q", k, [k, 1, 2, 3, 4]) for k in range(6)]
    b = [rec("q", k, [100 + k]) for k in range(6)] + [{"id": "q/s6", "error": "boom", "token_ids": None}]
    ea, ob = lossless.independent_samples(a, b, positions=2)
    assert ea == {"q": [[0, 1], [2, 1], [4, 1]]} and ob == {"q": [[101], [103], [105]]}
