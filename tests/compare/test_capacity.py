"""Capacity at the SLO, A against B: the ratio of the passing rates with the interval both brackets allow; a
change only when that interval excludes 1.0×; other targets are not compared."""

from __future__ import annotations

import json
import math
import shutil

import pytest

from .common import compare, one

pytestmark = pytest.mark.unit

SLO = {"ttft": 500.0}


def _with_capacity(run, method: str, rate, bound, slo=SLO) -> None:
    path = run / method / "summary.json"
    s = json.loads(path.read_text())
    s["load"] = {
        "burstiness": 1.0,
        "tasks": {
            "code": {
                "rates": [1.0, 4.0],
                "rates_from": "--rates",
                "capacity": {
                    "share": 0.9,
                    "slo": slo,
                    "kind": "found" if rate and bound else "never",
                    "rate": rate,
                    "bound": bound,
                    "resolution": 0.25,
                    "probes": [],
                    "text": f"{rate} req/s",
                },
            }
        },
    }
    path.write_text(json.dumps(s))


def test_capacity_changes_only_when_the_brackets_do_not_overlap(run_a, tmp_path):
    _with_capacity(run_a, "ngram", 2.0, 2.4)
    b = tmp_path / "b"
    shutil.copytree(run_a, b)
    _with_capacity(b, "ngram", 3.0, 3.5)
    cmp = compare(run_a, b)
    row = one(cmp.capacity, method="ngram", task="code")
    assert row["ratio"] == 1.5 and row["ratio_low"] == pytest.approx(3.0 / 2.4) and row["verdict"] == "changed (better)"
    assert "ngram code capacity at the SLO (changed (better))" in cmp.changed()
    _with_capacity(b, "ngram", 2.2, 2.6)
    assert one(compare(run_a, b).capacity, method="ngram")["verdict"] == "within the brackets"


def test_another_slo_or_a_side_without_a_search_is_said_not_compared(run_a, tmp_path):
    _with_capacity(run_a, "ngram", 2.0, 2.4)
    b = tmp_path / "b"
    shutil.copytree(run_a, b)
    _with_capacity(b, "ngram", 3.0, 3.5, slo={"ttft": 100.0})
    assert one(compare(run_a, b).capacity, method="ngram")["verdict"].startswith("not comparable: another SLO")
    _with_capacity(b, "ngram", None, 1.0)
    row = one(compare(run_a, b).capacity, method="ngram")
    assert row["verdict"] == "n/a (a side never met the SLO)" and row["ratio"] is None
    _with_capacity(b, "ngram", 2.0, None)
    assert math.isinf(one(compare(run_a, b).capacity, method="ngram")["ratio_high"])
    assert [r["verdict"] for r in compare(run_a, run_a).capacity] == ["within the brackets"]
    plain = tmp_path / "plain"
    shutil.copytree(run_a, plain)
    path = plain / "ngram" / "summary.json"
    path.write_text(json.dumps({k: v for k, v in json.loads(path.read_text()).items() if k != "load"}))
    assert [r["verdict"] for r in compare(run_a, plain).capacity] == ["capacity searched only in A"]
