"""`specstack demo`: the whole job on an embedded default (tiny local models, every method on real vLLM on the
CPU, one after another, one table per task; no GPU, no Docker, no downloads); `specstack table RUN`: those
tables for any finished run."""
from __future__ import annotations

import argparse
import os
from pathlib import Path

from specstack.cli import progress
from specstack.cli.options import add_dataset_option, add_prefix_caching_option, add_turns_option, default_run_id, run_tasks
from specstack.fixtures import tiny_models
from specstack.pipeline.sweep import console, sweep
from specstack.report import console_table
from specstack.runs.demo import DEMO_METHODS, demo_options


def _cmd_demo(args: argparse.Namespace) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # local folders only; never reach for a hub
    models_dir = Path(args.models_dir)
    console.print(f"building tiny models in {models_dir}")
    tiny_models.build_all(models_dir)
    opts = demo_options(args.run_id or f"demo-{default_run_id()}", args.results_dir, models_dir.resolve(), args.port,
                        tasks=run_tasks(None, args.datasets), datasets=tuple(args.datasets),
                        prefix_caching=args.prefix_caching, turns=args.turns)
    with progress.live(console):
        results = sweep(opts, list(DEMO_METHODS))
    console_table.print_run(Path(args.results_dir) / opts.run_id)
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
    add_dataset_option(p)  # the datasets instead of the built-in code and chat tasks
    add_prefix_caching_option(p)
    add_turns_option(p)
    p.set_defaults(func=_cmd_demo)
    p = sub.add_parser("table", help="print the per-task tables of a finished run")
    p.add_argument("run_dir", type=Path)
    p.set_defaults(func=lambda a: console_table.print_run(a.run_dir) or 0)
