"""The demo's runs (`specstack demo`, `make demo`), vLLM on the CPU, one method after another:
  * the trained set `smollm2` (SmolLM2-135M-Instruct, docs/models.md): baseline, ngram, draft_model and suffix on a
    copy-heavy task the model follows (`edit`: short edits of a short function) and the `chat` task; its acceptance
    and speed are a real model's;
  * the tiny set (random weights) for what the trained set has no model for: eagle3, and MTP with its own baseline,
    with the tiny baseline eagle3 is compared with; the accounting only.
Each its own run (a run has one model set): `<run-id>` and `<run-id>-tiny`. The workloads are small enough for two
CPU cores (a fresh clone's demo within 12 minutes here, docs/demo.md) and large enough for every figure to mean
something."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from specstack.config.serving import Platform
from specstack.runs.options import Options

# Every method: the integration tests' shared sweep and the GPU tests run them all on the tiny set.
DEMO_METHODS = ("baseline", "ngram", "draft_model", "eagle3", "suffix", "mtp-baseline", "mtp")
DEMO_TASKS = ("edit", "chat")


@dataclass(frozen=True)
class DemoPart:
    suffix: str  # of the run id
    model_set: str
    methods: tuple[str, ...]
    workload: dict


# The acceptance phase measures no speed: its requests go 4 at a time (the bench's largest concurrency here), a
# third of its one-at-a-time wall time on two cores; what a request accepts does not depend on its neighbours
# beyond the engine's bf16 numerics (docs/greedy-divergence.md).
_SMALL = dict(
    num_prompts=8, perf_output_len=32, acceptance_max_tokens=64, concurrencies=(1, 4), acceptance_concurrency=4
)
PARTS = (
    # 135M parameters decode far slower than the tiny models on two cores: few prompts, short answers
    DemoPart("", "smollm2", ("baseline", "ngram", "draft_model", "suffix"), _SMALL),
    # random weights: their speed means nothing, so no bench cells; the acceptance windows hold the accounting
    DemoPart("-tiny", "tiny", ("baseline", "eagle3", "mtp-baseline", "mtp"), {**_SMALL, "skip_bench": True}),
)


def demo_options(part: DemoPart, run_id: str, results_dir: Path, models_dir: Path, port: int, **overrides) -> Options:
    return Options(
        method=part.methods[0],
        run_id=run_id + part.suffix,
        results_dir=results_dir,
        model_set=part.model_set,
        platform=Platform.CPU_NATIVE,
        models_dir=str(models_dir),
        port=port,
        **{"tasks": DEMO_TASKS, **part.workload, **overrides},
    )
