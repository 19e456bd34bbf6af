"""The demo's run: every method on the tiny local models with vLLM on the CPU, at a workload small enough for
two CPU cores and large enough for every figure to mean something (`specstack demo`, `make demo`)."""
from __future__ import annotations

from pathlib import Path

from specstack.runs.options import Options

DEMO_METHODS = ("baseline", "ngram", "draft_model", "eagle3", "suffix", "mtp-baseline", "mtp")
DEMO_WORKLOAD = dict(num_prompts=16, perf_output_len=64, acceptance_max_tokens=96, concurrencies=(1, 4))


def demo_options(run_id: str, results_dir: Path, models_dir: Path, port: int, **overrides) -> Options:
    return Options(method=DEMO_METHODS[0], run_id=run_id, results_dir=results_dir, model_set="tiny",
                   platform="cpu-native", models_dir=str(models_dir), port=port,
                   **{**DEMO_WORKLOAD, **overrides})
