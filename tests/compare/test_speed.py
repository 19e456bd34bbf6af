"""Bench figures: B/A with its interval, point only under three repeats, busy hosts marked."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.bundles import make_run

from .common import compare, one

pytestmark = pytest.mark.unit


def test_slower_speed_is_changed_with_an_interval_and_gated(run_a, tmp_path):
    b = make_run(tmp_path, "slow", speed=0.5)
    cmp = compare(run_a, b, "throughput:-10%")
    row = one(cmp.speed, method="ngram", task="code", concurrency=1, figure="throughput")
    assert row["ratio_high"] < 1.0 and row["verdict"] == "changed (worse)"
    assert one(cmp.speed, method="ngram", task="code", concurrency=1, figure="tpot_p50")["verdict"] == "changed (worse)"
    assert (
        one(cmp.speed, method="baseline", task="code", concurrency=1, figure="throughput")["verdict"] == "within noise"
    )
    assert cmp.failed
    assert {g["basis"] for g in cmp.gate if g["failed"]} == {"95 % interval"}
    # under three repeats a side: the point decides, and says so
    single = make_run(tmp_path, "one", repeats=1)
    slow = make_run(tmp_path, "slow1", repeats=1, speed=0.5)
    cmp = compare(single, slow, "throughput:-10%")
    assert one(cmp.speed, method="ngram", task="code", concurrency=1, figure="throughput")["verdict"].startswith(
        "point only"
    )
    assert cmp.failed and {g["basis"] for g in cmp.gate if g["failed"]} == {"point only"}


def test_a_busy_host_marks_the_speed_rows(run_a, tmp_path):
    b = tmp_path / "busy"
    shutil.copytree(run_a, b)
    path = b / "ngram" / "summary.json"
    s = json.loads(path.read_text())
    for w in s["windows"]:
        if w["phase"] == "bench" and w["task"] == "code" and w["concurrency"] == 1:
            w["cpu"] = {
                "seconds": 10.0,
                "cores": 2,
                "other": 5.0,
                "other_share": 0.25,
                "bench": 2.0,
                "bench_share_of_core": 0.2,
            }
    path.write_text(json.dumps(s))
    cmp = compare(run_a, b)
    marked = {(r["method"], r["task"], r["concurrency"]) for r in cmp.speed if "busy host" in (r["note"] or "")}
    assert marked == {("ngram", "code", 1)}
    assert "busy host (other processes n/a/25% of the core-seconds A/B > 10%)" in next(
        r["note"] for r in cmp.speed if "busy host" in (r["note"] or "")
    )
