"""Speedups over each run's own baseline: B's point against A's 95 % interval (compare/speedups.py)."""

from __future__ import annotations

import json

import pytest

from specstack.cli.main import main
from specstack.compare import sections, speedups
from specstack.figures import stats as st
from specstack.results.reader import load_run
from tests.bundles import make_run, write_method

from .common import compare, one

pytestmark = pytest.mark.unit


def test_a_one_repeat_run_that_reads_the_same_speedup_is_inside_a_replicated_runs_interval(run_a, tmp_path):
    quick = make_run(tmp_path, "quick", repeats=1)
    cmp = compare(run_a, quick)
    row = one(cmp.speedups, method="ngram", task="code", concurrency=1, figure="throughput")
    assert row["a_low"] <= row["b"] <= row["a_high"] and row["verdict"] == "inside A's prediction interval"
    # where one more run would land is wider than where A's median is
    assert row["a_predicted_low"] < row["a_low"] and row["a_high"] < row["a_predicted_high"]
    assert row["b_low"] is None  # one repeat: a point
    assert row["design_a"] == "3 repeats in one server session" and row["design_b"] == "1 repeat in one server session"
    assert one(cmp.speedups, method="ngram", task="chat", concurrency=4, figure="latency")["basis"] == "TPOT"
    # every speculative cell of both runs, two speedups each; the baseline has none
    assert {(r["task"], r["concurrency"], r["figure"]) for r in cmp.speedups} == {
        (t, c, f) for t in ("code", "chat") for c in (1, 4) for f in speedups.FIGURES
    }
    assert speedups.tally(cmp.speedups) == (8, 8)
    md = sections.blocks(cmp)
    expected = (
        "**8 of 8** of B's speedups lie inside A's 95 % prediction intervals (about 8 expected when nothing changed"
    )
    assert ("p", expected + "; 0 outside; the Speedups table below).") in md


def test_a_slower_speedup_is_below_and_a_faster_above_the_interval(run_a, tmp_path):
    slow = compare(run_a, make_run(tmp_path, "slow", repeats=1, speed=0.5))
    fast = compare(run_a, make_run(tmp_path, "fast", repeats=1, speed=2.0))
    for figure in speedups.FIGURES:
        assert (
            one(slow.speedups, task="code", concurrency=1, figure=figure)["verdict"] == "below A's prediction interval"
        )
        assert (
            one(fast.speedups, task="code", concurrency=1, figure=figure)["verdict"] == "above A's prediction interval"
        )
    assert speedups.tally(slow.speedups) == (0, 8)


def test_a_host_slower_for_both_methods_alike_moves_no_speedup(run_a, tmp_path):
    """Every raw figure of B half as fast (baseline too): the speed table says "changed", the speedups agree."""
    b = make_run(tmp_path, "slow-host", repeats=1)
    for method in ("baseline", "ngram"):
        for path in (b / method / "bench").rglob("*.json"):
            text = path.read_text()
            doc = json.loads(text)
            doc["output_throughput"] /= 2
            for k in [k for k in doc if k.endswith("_tpot_ms")]:
                doc[k] *= 2
            path.write_text(json.dumps(doc))
    cmp = compare(run_a, b)
    assert speedups.tally(cmp.speedups) == (8, 8)
    assert one(cmp.speed, method="baseline", task="code", concurrency=1, figure="throughput")["ratio"] == pytest.approx(
        0.5, rel=0.05
    )


def test_without_an_interval_in_a_no_verdict_is_given(tmp_path):
    cmp = compare(make_run(tmp_path, "a1", repeats=1), make_run(tmp_path, "b1", repeats=1))
    row = one(cmp.speedups, task="code", concurrency=1, figure="throughput")
    assert row["verdict"] == "no interval in A (1 repeat; needs ≥ 3)"
    assert speedups.tally(cmp.speedups) == (0, 0)


def test_other_hardware_rules_the_speedups_out(run_a, tmp_path):
    cmp = compare(run_a, make_run(tmp_path, "other", repeats=1, machine="aarch64"))
    row = one(cmp.speedups, task="code", concurrency=1, figure="throughput")
    assert row["verdict"].startswith("not comparable: other hardware") and not row["comparable"]
    assert speedups.tally(cmp.speedups) == (0, 0)


def test_the_command_prints_the_count_and_writes_the_table(run_a, tmp_path, capsys):
    out = tmp_path / "cmp"
    assert main(["compare", str(run_a), str(make_run(tmp_path, "slow", repeats=1, speed=0.5)), "--out", str(out)]) == 0
    assert json.loads(capsys.readouterr().out)["speedups_inside"] == "0 of 8"
    doc = json.loads((out / "compare.json").read_text())
    assert {r["verdict"] for r in doc["speedups"]} == {"below A's prediction interval"}
    assert "**0 of 8** of B's speedups lie inside A's 95 % prediction intervals" in (out / "compare.md").read_text()


def test_session_pairs_predict_from_each_pairs_ratio(tmp_path):
    """A machine that slows session after session, the method 1.25x faster per token in each pair: the pairs
    predict 1.25x exactly, where the sides' spread alone would predict almost anything."""
    run_dir = tmp_path / "sessions"
    run_dir.mkdir()
    rep = {"design": "sessions", "sessions": 3, "repeats_per_session": 1}
    for s, tpot in enumerate([10.0, 14.0, 18.0], start=1):
        write_method(
            run_dir,
            f"baseline-s{s}",
            baseline=None,
            k=None,
            cells={("code", 1): [(tpot, 100.0 / s, {})]},
            texts={"code": {"a": ("t", "stop")}},
            replication={**rep, "session": s, "of": "baseline"},
        )
        write_method(
            run_dir,
            f"ngram-s{s}",
            baseline="baseline",
            cells={("code", 1): [(tpot / 1.25, 130.0 / s, {})]},
            texts={"code": {"a": ("t", "stop")}},
            replication={**rep, "session": s, "of": "ngram"},
        )
    run = load_run(run_dir)
    md, base = run.methods["ngram"], run.methods["baseline"]
    assert speedups.prediction(md, base, "code", 1, "latency", "TPOT") == pytest.approx((1.25, 1.25))
    assert speedups.prediction(md, base, "code", 1, "throughput", None) == pytest.approx((1.3, 1.3))
    low, high = st.prediction_ratio([10.0, 14.0, 18.0], [8.0, 11.2, 14.4])  # each side's spread, unpaired
    assert low < 0.8 and high > 2.0
