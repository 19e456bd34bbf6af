"""`specstack demo`: the whole job on an embedded default. Tiny local models, every method on real vLLM
(CPU) one after another, one table per task. No GPU, no Docker, no downloads."""
from __future__ import annotations

import argparse
import os
from pathlib import Path

from . import progress, summary_table, tiny_models
from .run import Options, console, default_run_id, sweep

DEMO_METHODS = ("baseline", "ngram", "draft_model", "eagle3", "suffix", "mtp-baseline", "mtp")
# Small enough for two CPU cores, large enough for every figure to mean something.
DEMO_WORKLOAD = dict(num_prompts=16, perf_output_len=64, acceptance_max_tokens=96, concurrencies=(1, 4))


def demo_options(run_id: str, results_dir: Path, models_dir: Path, port: int, **overrides) -> Options:
    return Options(method=DEMO_METHODS[0], run_id=run_id, results_dir=results_dir, model_set="tiny",
                   platform="cpu-native", models_dir=str(models_dir), port=port,
                   **{**DEMO_WORKLOAD, **overrides})


def _cmd_demo(args: argparse.Namespace) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # local folders only; never reach for a hub
    models_dir = Path(args.models_dir)
    console.print(f"building tiny models in {models_dir}")
    tiny_models.build_all(models_dir)
    opts = demo_options(args.run_id or f"demo-{default_run_id()}", args.results_dir, models_dir.resolve(), args.port)
    with progress.live(console):
        results = sweep(opts, list(DEMO_METHODS))
    summary_table.print_run(Path(args.results_dir) / opts.run_id)
    failed = [s["method"] for s in results if s["status"] != "ok"]
    console.print(f"results: {Path(args.results_dir) / opts.run_id}")
    if failed:
        console.print(f"[bold red]failed: {', '.join(failed)}[/]")
    return 1 if failed else 0


def register(sub) -> None:
    p = sub.add_parser("demo", help="every method on tiny local models with vLLM on the CPU")
    p.add_argument("--run-id", default=None)
    p.add_argument("--results", dest="results_dir", type=Path, default=Path("results"))
    p.add_argument("--models-dir", default=os.environ.get("SPECSTACK_MODELS", ".specstack/models"))
    p.add_argument("--port", type=int, default=8000)
    p.set_defaults(func=_cmd_demo)
    p = sub.add_parser("table", help="print the per-task tables of a finished run")
    p.add_argument("run_dir", type=Path)
    p.set_defaults(func=lambda a: summary_table.print_run(a.run_dir) or 0)
