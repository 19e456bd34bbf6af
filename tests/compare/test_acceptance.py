"""Acceptance-phase figures: exact verdicts on the counts, and the request interval that sizes a change."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from specstack.cli.main import main
from specstack.compare.pairing import SHAPE
from tests.bundles import HIST, figures, make_run, perturb, set_acceptance

from .common import compare, one

pytestmark = pytest.mark.unit


def test_k2_against_k4_flags_the_acceptance_length_and_rules_out_the_shape(tmp_path):
    a, b = make_run(tmp_path, "k2", k=2), make_run(tmp_path, "k4", k=4)
    cmp = compare(a, b)
    pair = one(cmp.pairs, method="ngram", task="code")
    assert [d.fact for d in pair.differences] == ["K"]
    length = one(cmp.acceptance, method="ngram", task="code", figure="acceptance_length")
    fa, fb = figures(HIST[2]), figures(HIST[4])
    assert length["a"] == fa["mean_acceptance_length"] and length["b"] == fb["mean_acceptance_length"]
    assert length["verdict"] == "changed" and length["relative"] == pytest.approx(
        fb["mean_acceptance_length"] / fa["mean_acceptance_length"] - 1
    )
    for r in [r for r in cmp.positions + cmp.histogram if r["method"] == "ngram"]:
        assert r["verdict"].startswith("not comparable: other K (2 → 4)") and not r["comparable"]
    assert SHAPE in pair.differences[0].rules_out
    # speed is still compared: the K does not make a machine slower by definition
    assert all(r["comparable"] for r in cmp.speed)


def test_a_perturbed_copy_is_flagged_and_fails_the_gate(run_a, tmp_path, capsys):
    b = perturb(run_a, tmp_path / "run-b", factor=0.8)
    cmp = compare(run_a, b, "acceptance_length:-2%")
    row = one(cmp.acceptance, method="ngram", task="code", figure="acceptance_length")
    assert row["verdict"] == "changed" and row["relative"] < -0.02
    assert cmp.failed and any(g["failed"] and "ngram code" in g["figure"] for g in cmp.gate)
    # speed and outputs untouched: no change there
    assert all(r["verdict"] == "within noise" for r in cmp.speed)
    code = main(["compare", str(run_a), str(b), "--out", str(tmp_path / "o"), "--fail-on", "acceptance_length:-2%"])
    assert code == 1
    assert "regression: acceptance_length:-2%" in capsys.readouterr().out
    # a threshold wider than the change passes
    change = -row["relative"] * 100
    assert (
        main(
            [
                "compare",
                str(run_a),
                str(b),
                "--out",
                str(tmp_path / "o"),
                "--fail-on",
                f"acceptance_length:-{change + 1:.1f}%",
            ]
        )
        == 0
    )


def test_one_count_is_a_change(run_a, tmp_path):
    """Exact sums: a single accepted draft more is "changed", not noise."""
    b = tmp_path / "run-b"
    shutil.copytree(run_a, b)
    hist = list(HIST[4])
    hist[3], hist[4] = hist[3] + 1, hist[4] - 1
    set_acceptance(b, "ngram", "chat", figures(hist))
    cmp = compare(run_a, b)
    assert not cmp.run_b.findings  # measured so, not edited: its summary and its records agree
    assert one(cmp.acceptance, task="chat", figure="acceptance_length")["verdict"] == "changed"
    assert one(cmp.acceptance, task="code", figure="acceptance_length")["verdict"] == "same"
    assert [r["position"] for r in cmp.histogram if r["verdict"] == "changed"] == [3, 4]


def test_the_request_interval_sizes_a_change_and_brackets_no_change():
    from specstack.compare.acceptance import request_interval

    a = np.asarray([[4, 8, 2]] * 5 + [[4, 8, 3]] * 5, dtype=float)  # (R, D, C) per request
    b = np.asarray([[4, 16, 8]] * 5 + [[4, 16, 7]] * 5, dtype=float)
    iv = request_interval((a, b), "acceptance_length")
    assert iv["ratio"] == pytest.approx((1 + b[:, 2].sum() / b[:, 0].sum()) / (1 + a[:, 2].sum() / a[:, 0].sum()))
    assert 1.0 < iv["ratio_low"] <= iv["ratio"] <= iv["ratio_high"] and iv["requests_paired"] == 10
    same = request_interval((a, a.copy()), "acceptance_rate")
    assert same["ratio"] == 1.0 and same["ratio_low"] <= 1.0 <= same["ratio_high"]
    assert request_interval((a[:2], b[:2]), "acceptance_length")["ratio_low"] is None  # under MIN_REPEATS
