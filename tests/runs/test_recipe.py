"""The recipe: what a run records of its Options, and the Options `specstack reproduce` builds from it."""

from __future__ import annotations

from pathlib import Path

import pytest

from specstack.runs import recipe
from specstack.runs.options import Options

pytestmark = pytest.mark.unit


def test_recorded_options_come_back_and_workload_files_inside_the_run_follow_the_bundle(tmp_path):
    run_dir, elsewhere = tmp_path / "run", tmp_path / "user"
    opts = Options(
        method="ngram",
        run_id="run",
        results_dir=tmp_path,
        model_set="tiny",
        platform="cpu-native",
        models_dir="/m",
        port=8123,
        tasks=("code", "mt-bench"),
        datasets=("mt-bench",),
        num_prompts=5,
        perf_output_len=33,
        acceptance_max_tokens=44,
        concurrencies=(1, 3),
        request_rate=2.5,
        repeats=4,
        warmup_requests=0,
        acceptance_concurrency=2,
        quiet_gap=1.5,
        skip_bench=True,
        workload_files={"code": (run_dir / "inputs" / "p.jsonl", elsewhere / "a.jsonl")},
    )
    rec = recipe.record(opts, run_dir)
    assert rec["workload_files"] == {"code": ["inputs/p.jsonl", str(elsewhere / "a.jsonl")]}
    moved = tmp_path / "moved"
    again = recipe.options(rec, run_id="new", results_dir=tmp_path / "r", run_dir=moved)
    for name in recipe.FIELDS:
        assert getattr(again, name) == getattr(opts, name), name
    assert again.workload_files == {"code": (moved / "inputs" / "p.jsonl", elsewhere / "a.jsonl")}
    assert (again.run_id, again.results_dir) == ("new", tmp_path / "r")
    assert recipe.options(rec, run_id="n", results_dir=tmp_path, run_dir=moved, port=9, models_dir=None).port == 9


def test_a_bundle_older_than_the_recipe_is_read_from_its_workload_and_says_what_it_lacks():
    manifest = {
        "model_set": "tiny",
        "platform": "cpu-native",
        "workload": {"tasks": ["code"], "num_prompts": 8, "concurrencies": [1, 4], "repeats": 2, "sessions": None},
    }
    rec, missing = recipe.from_manifest(manifest)
    opts = recipe.options(rec, run_id="x", results_dir=Path("r"), run_dir=Path("old"))
    assert (opts.tasks, opts.num_prompts, opts.concurrencies, opts.repeats, opts.model_set) == (
        ("code",),
        8,
        (1, 4),
        2,
        "tiny",
    )
    assert "warmup_requests" in missing and "num_prompts" not in missing and "model_set" not in missing


def test_each_method_is_replayed_with_its_own_override_folder_and_session():
    base = Options(method="baseline", run_id="x", repeats=3)
    k2 = recipe.method_options(
        base,
        "ngram-k2",
        {
            "method": "ngram-k2",
            "base_method": "ngram",
            "spec_override": {"num_speculative_tokens": 2},
            "replication": {"design": "repeats", "repeats": 3},
        },
    )
    assert (k2.method, k2.bundle_name, k2.spec_override, k2.repeats) == (
        "ngram",
        "ngram-k2",
        {"num_speculative_tokens": 2},
        3,
    )
    s2 = recipe.method_options(
        base,
        "suffix-s2",
        {
            "method": "suffix-s2",
            "base_method": "suffix",
            "replication": {"design": "sessions", "session": 2, "sessions": 3, "repeats_per_session": 1},
        },
    )
    assert (s2.method, s2.bundle_name, s2.session, s2.sessions, s2.repeats) == ("suffix", "suffix-s2", 2, 3, 1)
    plain = recipe.method_options(base, "baseline", {"method": "baseline", "base_method": "baseline"})
    assert plain.bundle_name is None and plain.spec_override is None
