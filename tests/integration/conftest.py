"""Shared real components for the integration tests: tiny models, one Prometheus, and one sweep of every
method on real vLLM (CPU). Servers start once per method; every test reads the same bundles."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from specstack import events
from specstack.pipeline.sweep import sweep
from specstack.runs.demo import DEMO_METHODS
from specstack.runs.method_run import run_method
from specstack.runs.options import Options
from tests.support import SCRAPE_SECONDS, Prometheus, free_port

HF_TOKEN_SENTINEL = "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0123"
WORKLOAD = dict(num_prompts=8, perf_output_len=48, acceptance_max_tokens=64, concurrencies=(1, 4))
# per-request targets for the sweep's goodput (test_goodput.py): generous, so most requests on this CPU meet them
SLO = {"ttft": 2000.0, "tpot": 100.0}


@pytest.fixture(scope="session")
def prometheus(tmp_path_factory):
    work = tmp_path_factory.mktemp("prometheus")
    targets = work / "targets"
    targets.mkdir()
    prom = Prometheus(work, targets, windows_port=free_port())
    yield prom
    prom.stop()


def sweep_options(models_dir: Path, results: Path, run_id: str, **overrides) -> Options:
    return Options(
        method="baseline",
        run_id=run_id,
        results_dir=results,
        model_set="tiny",
        platform="cpu-native",
        models_dir=str(models_dir),
        port=free_port(),
        **{**WORKLOAD, **overrides},
    )


@pytest.fixture(scope="session")
def sweep_run(models_dir, prometheus, tmp_path_factory):
    """Every method once, one after another, under one run id; Prometheus scraping throughout."""
    results = tmp_path_factory.mktemp("results")
    # A token in the environment, as users have one: it must reach no file of the bundle (test_sweep greps).
    os.environ["HF_TOKEN"] = HF_TOKEN_SENTINEL
    opts = sweep_options(
        models_dir,
        results,
        "it-sweep",
        quiet_gap=SCRAPE_SECONDS * 1.5,
        prometheus_targets=prometheus.targets_dir / "vllm.json",
        windows_port=prometheus.windows_port,
        prometheus_url=prometheus.url,
        prometheus_scrape_seconds=SCRAPE_SECONDS,
        slo=SLO,
    )
    recorder = events.Recorder()  # what a progress display would have been told
    with events.listening(recorder):
        summaries = {s["method"]: s for s in sweep(opts, list(DEMO_METHODS))}
    return {"run_dir": results / "it-sweep", "summaries": summaries, "events": recorder}


@pytest.fixture(scope="session")
def self_draft_run(models_dir, tmp_path_factory):
    """draft_model whose draft is the target itself: greedy drafts are the target's own choices."""
    results = tmp_path_factory.mktemp("self-draft")
    opts = sweep_options(
        models_dir,
        results,
        "it-self-draft",
        skip_bench=True,
        warmup_requests=1,
        spec_override={"model": str(models_dir / "tiny-qwen3")},
    )
    opts.method = "draft_model"
    summary, _ = run_method(opts)
    return summary


MT_BENCH_PROMPTS = 8


def mt_bench_args(models_dir, results, *extra: str) -> list[str]:
    """`specstack run --method ngram --dataset mt-bench` on the tiny models, as test_datasets and
    test_prefix_caching read it."""
    return [
        "run",
        "--method",
        "ngram",
        "--dataset",
        "mt-bench",
        "--model-set",
        "tiny",
        "--platform",
        "cpu-native",
        "--models-dir",
        str(models_dir),
        "--port",
        str(free_port()),
        "--results",
        str(results),
        "--run-id",
        "it-mt-bench",
        "--num-prompts",
        str(MT_BENCH_PROMPTS),
        "--concurrency",
        "1",
        "--perf-output-len",
        "32",
        "--acceptance-max-tokens",
        "32",
        "--warmup-requests",
        "1",
        *extra,
    ]


@pytest.fixture(scope="session")
def mt_bench_run(models_dir, tmp_path_factory):
    """One server for two files' questions (CI time): MT-Bench as a dataset (test_datasets) with prefix caching on
    (test_prefix_caching)."""
    import json

    from specstack.cli.main import main

    results, cache = tmp_path_factory.mktemp("datasets-run"), tmp_path_factory.mktemp("datasets-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SPECSTACK_DATASETS", str(cache))
        code = main(mt_bench_args(models_dir, results, "--prefix-caching"))
    run_dir = results / "it-mt-bench"
    summary = json.loads((run_dir / "ngram" / "summary.json").read_text())
    assert code == 0 and summary["status"] == "ok", summary["error"]
    return {"run_dir": run_dir, "results": results, "summary": summary, "cache": cache}
