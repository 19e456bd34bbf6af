"""The summary's per-task figures as runs/method_summary.py `finish` writes them, every key and value pinned (a file
recorded from the dict-literal code before the figures became typed records, results/summary.py): a closed-loop cell
with --slo, an open-loop cell, a greedy window split by category, a sampled phase and turn 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specstack.results import layout
from specstack.results.bundle import MethodBundle
from specstack.results.summary import Summary
from specstack.runs.method_summary import finish
from tests.bundles import bench_json, chat_record, per_request_lists

pytestmark = pytest.mark.unit

GOLDEN = Path(__file__).with_name("finish_golden.json")


def _figures(accepted: int) -> dict:
    return {
        "acceptance_rate": accepted / 8,
        "mean_acceptance_length": 1 + accepted / 4,
        "histogram": [1, 2, 1],
        "steps": 4,
        "draft_tokens": 8,
        "accepted": accepted,
        "per_position_rates": [0.75, 0.25],
        "per_position_conditional_rates": [0.75, 0.33],
        "drafted_per_position": [4, 3],
        "no_accept_share": 0.25,
    }


def _window(name: str, phase: str, **extra) -> dict:
    return {
        "name": name,
        "phase": phase,
        "task": "code",
        "status": "ok",
        "reason": None,
        "checks": [{"name": "drafts", "ok": True, "expected": 8, "actual": 8, "hint": ""}],
        "counters": {"counters": {"vllm:prefix_cache_queries": 10.0, "vllm:prefix_cache_hits": 4.0}},
        **extra,
    }


def run_finish(tmp_path) -> dict:
    bundle = MethodBundle(tmp_path, "r", "ngram")
    rows = [chat_record("a", "p a", "x y z", "stop"), chat_record("b", "p b", "x y", "length")]
    for rel in (layout.acceptance_records("code"), layout.turn2_records("code")):
        bundle.path(rel).write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    windows = [
        _window(
            layout.acceptance_window("code"),
            "acceptance",
            from_responses=_figures(4),
            by_category={"writing": {"requests": 1, **_figures(3)}, "math": {"requests": 1, **_figures(1)}},
        ),
        _window(
            layout.sampled_window("code", 0.6),
            "sampled",
            from_responses=_figures(2),
            by_category={"writing": {"requests": 2, **_figures(2)}},
        ),
        _window(layout.turn2_window("code"), "acceptance", from_responses=_figures(5)),
    ]
    slo = {"ttft": 100.0}
    for cell, conc, rate, load in (("code-c4-r0", 4, None, "concurrency"), ("code-rate0.5-r0", None, 0.5, "rate")):
        data = bench_json(
            10.0,
            100.0,
            acc_len=2.5,
            c=conc,
            requests=per_request_lists([40.0, 50.0], [[10.0] * 3] * 2, concurrency=conc or 1),
        )
        bundle.path(layout.bench_file(cell)).write_text(json.dumps(data))
        windows.append(
            _window(layout.bench_window(cell), "bench", concurrency=conc, request_rate=rate, load=load, repeat=0)
        )
    summary = {
        "method": "ngram",
        "error": None,
        "windows": windows,
        "tasks": {},
        "turn2_inputs": {
            "code": {
                "file": "inputs/code.turn2.baseline.jsonl",
                "sha256": "a" * 64,
                "answers_from": "baseline",
                "requests": 2,
                "left_out": 1,
            }
        },
    }
    return finish(
        Summary.from_json(summary), {"code": None}, bundle, allow_mismatch=False, temperatures=(0.6, 1.0), slo=slo
    ).to_json()


def test_finish_writes_the_figures_it_always_wrote(tmp_path):
    summary = run_finish(tmp_path)
    assert json.loads(json.dumps(summary)) == json.loads(GOLDEN.read_text())


def test_what_finish_writes_reads_as_typed_records_and_round_trips(tmp_path):
    summary = json.loads(json.dumps(run_finish(tmp_path)))
    s = Summary.from_json(summary)
    assert s.to_json() == summary
    code = s.task_figures["code"]
    assert [c.load_text for c in code.cells] == ["c=4", "0.5 req/s"] and code.cells[0].goodput is not None
    assert code.cells[1].goodput is not None and code.turn2 is not None and code.turn2.left_out == 1
    assert [p.temperature for p in code.sampled_phases] == [0.6] and set(code.category_figures) == {"writing", "math"}
