"""Shared real components for the integration tests: tiny models, one Prometheus, and one sweep of every
method on real vLLM (CPU). Servers start once per method; every test reads the same bundles."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from specstack import events
from specstack.runs.demo import DEMO_METHODS
from specstack.runs.method_run import run_method
from specstack.runs.options import Options
from specstack.runs.sweep import sweep

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
    return Options(method="baseline", run_id=run_id, results_dir=results, model_set="tiny",
                   platform="cpu-native", models_dir=str(models_dir), port=free_port(),
                   **{**WORKLOAD, **overrides})


@pytest.fixture(scope="session")
def sweep_run(models_dir, prometheus, tmp_path_factory):
    """Every method once, one after another, under one run id; Prometheus scraping throughout."""
    results = tmp_path_factory.mktemp("results")
    # A token in the environment, as users have one: it must reach no file of the bundle (test_sweep greps).
    os.environ["HF_TOKEN"] = HF_TOKEN_SENTINEL
    opts = sweep_options(models_dir, results, "it-sweep", quiet_gap=SCRAPE_SECONDS * 1.5,
                         prometheus_targets=prometheus.targets_dir / "vllm.json",
                         windows_port=prometheus.windows_port, prometheus_url=prometheus.url,
                         prometheus_scrape_seconds=SCRAPE_SECONDS, slo=SLO)
    recorder = events.Recorder()  # what a progress display would have been told
    with events.listening(recorder):
        summaries = {s["method"]: s for s in sweep(opts, list(DEMO_METHODS))}
    return {"run_dir": results / "it-sweep", "summaries": summaries, "events": recorder}


@pytest.fixture(scope="session")
def self_draft_run(models_dir, tmp_path_factory):
    """draft_model whose draft is the target itself: greedy drafts are the target's own choices."""
    results = tmp_path_factory.mktemp("self-draft")
    opts = sweep_options(models_dir, results, "it-self-draft", skip_bench=True, warmup_requests=1,
                         spec_override={"model": str(models_dir / "tiny-qwen3")})
    opts.method = "draft_model"
    summary, _ = run_method(opts)
    return summary
