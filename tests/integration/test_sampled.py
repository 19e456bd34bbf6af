"""Acceptance when sampling (--temperatures) on real vLLM (CPU, tiny models): the sampled window is bracketed
and cross-checked like the greedy one, every request carries its temperature and its own seed, and the
temperature really reached the sampler (the answers differ from the greedy ones)."""
from __future__ import annotations

import json

import pytest

from specstack.results.records import read_records
from specstack.runs.method_run import run_method

from .conftest import sweep_options

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def sampled_run(models_dir, tmp_path_factory):
    results = tmp_path_factory.mktemp("sampled")
    opts = sweep_options(models_dir, results, "sampled", tasks=("code",), num_prompts=4, perf_output_len=32,
                         acceptance_max_tokens=48, concurrencies=(1,), warmup_requests=1, skip_bench=True,
                         temperatures=(1.0,))
    opts.method = "ngram"
    summary, path = run_method(opts)
    assert summary["status"] == "ok", summary["error"]
    return summary, path


def test_a_sampled_window_is_crosschecked_like_the_greedy_one(sampled_run):
    summary, path = sampled_run
    window = next(w for w in summary["windows"] if w["name"] == "sampled/code/t1")
    assert window["status"] == "ok" and window["checks"] and all(c["ok"] for c in window["checks"]), window["checks"]
    figures = summary["tasks"]["code"]["sampled"]["1"]
    assert figures["num_accepted_draft_tokens"] == window["from_responses"]["accepted"]
    assert figures["num_draft_tokens"] == window["from_responses"]["draft_tokens"] > 0
    assert (path / "summary.json").exists() and json.loads((path / "summary.json").read_text())["tasks"]["code"][
        "sampled"]["1"] == figures


def test_every_request_is_sampled_with_its_own_seed_and_the_answers_differ_from_greedy(sampled_run):
    _, path = sampled_run
    raw = [json.loads(line) for line in (path / "sampled" / "code-t1.jsonl").read_text().splitlines()]
    assert [(r["request"]["temperature"], r["request"]["seed"]) for r in raw] == [(1.0, 42 + i) for i in range(4)]
    greedy = {r["id"]: r["text"] for r in read_records(path / "acceptance" / "code.jsonl")}
    sampled = {r["id"]: r["text"] for r in read_records(path / "sampled" / "code-t1.jsonl")}
    assert sampled.keys() == greedy.keys()
    assert any(sampled[i] != greedy[i] for i in greedy), "temperature 1 gave the greedy answers: not applied"
