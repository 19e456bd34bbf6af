"""What a run's manifest records when a method starts: the workload asked for, the inputs' and datasets' hashes,
the recipe that re-runs it, the locks and the host (results/bundle.py update_manifest writes it)."""

from __future__ import annotations

from pathlib import Path

from specstack import __version__
from specstack.config import methods
from specstack.config.workloads import Task
from specstack.datasets import tasks as dataset_tasks
from specstack.results.bundle import update_manifest
from specstack.runs import recipe, turns
from specstack.runs.options import SESSION_ORDER, Options
from specstack.server import provenance

REPO = Path(__file__).resolve().parents[3]


def record(opts: Options, run_dir: Path, tasks: dict[str, Task]) -> None:
    """The run's facts into its manifest (each method of a sweep writes the same ones)."""
    update_manifest(
        run_dir,
        run_id=opts.run_id,
        specstack_version=__version__,
        git_commit=provenance.git_commit(REPO),
        model_set=opts.model_set,
        model_weights=methods.weights_of(opts.model_set),
        platform=opts.platform,
        host=provenance.host(),
        inputs={
            **turns.kept_inputs(run_dir),
            **{
                str(Path(p).relative_to(run_dir) if Path(p).is_relative_to(run_dir) else p): h
                for t in tasks.values()
                for p, h in t.hashes().items()
            },
        },
        workload={
            "tasks": list(opts.tasks),
            "num_prompts": opts.num_prompts,
            "perf_output_len": opts.perf_output_len,
            "acceptance_max_tokens": opts.acceptance_max_tokens,
            "concurrencies": list(opts.concurrencies),
            "request_rate": opts.request_rate,
            "slo": opts.slo,
            "rates": list(opts.rates) or ("auto" if opts.rates_auto else None),
            "burstiness": opts.burstiness,
            "rates_max_concurrency": opts.rates_max_concurrency,
            "capacity_share": opts.capacity_share,
            "repeats": opts.repeats,
            "replicate": opts.replicate,
            "sessions": opts.sessions,
            "session_order": SESSION_ORDER if opts.replicate == "sessions" else None,
        },
        datasets={
            name: record for name, t in tasks.items() if (record := dataset_tasks.recorded(t.acceptance_path, name))
        },
        recipe=recipe.record(opts, run_dir),
        locks=provenance.lock_hashes(REPO),
    )
