"""`specstack run` (one method) and `specstack sweep` (several under one run id: one after another, or side by side
on the host's GPUs or CPU sets, `--gpus`/`--cpusets`, each method then a `specstack slot-run` of its own)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rich.console import Console

from specstack.cli import progress
from specstack.cli.options import add_methods_option, add_option, add_run_options, options_from_args, sweep_methods
from specstack.config import methods
from specstack.errors import UserError
from specstack.pipeline import parallel
from specstack.pipeline.sweep import sweep
from specstack.report import console_table
from specstack.runs.method_run import console, run_method
from specstack.runs.monitoring import Monitoring


def _tables(opts) -> None:
    """The run's tables at its end, on stderr (stdout keeps its one JSON line), wide enough when piped."""
    run_dir = opts.results_dir / opts.run_id
    if run_dir.is_dir():
        console_table.print_run(run_dir, Console(stderr=True, width=max(150, console.width)))
        console_table.seal_run(run_dir)  # tables.txt, then SHA256SUMS over every file of the run


def _cmd_run(args: argparse.Namespace) -> int:
    opts = options_from_args(args, args.method)  # with --bundle-name and --baseline-result, run's own
    with progress.live(console), Monitoring.for_options(opts) as monitoring:
        summary, path = run_method(opts, monitoring=monitoring)
    _tables(opts)
    print(json.dumps({"status": summary["status"], "crosscheck_ok": summary["crosscheck"]["ok"], "bundle": str(path)}))
    return 0 if summary["status"] == "ok" else 1


def _cmd_sweep(args: argparse.Namespace) -> int:
    names = [m for m in sweep_methods(args).split(",") if m]
    opts = options_from_args(args, names[0])
    if args.gpus or args.cpusets:  # side by side on the host's slots, each method a process of its own
        failed = parallel.parallel_sweep(
            opts, names, gpus=args.gpus or "", cpusets=args.cpusets or "", calibrate=args.calibrate
        )
    else:
        if args.calibrate:
            raise UserError(
                "--calibrate measures each baseline on every slot of a parallel sweep: give the slots "
                "(--gpus 0,1 or --cpusets 0,1)"
            )
        with progress.live(console):
            results = sweep(opts, names)
        failed = [s["method"] for s in results if s["status"] != "ok"]
    _tables(opts)
    print(json.dumps({"run_id": opts.run_id, "failed": failed}))
    return 1 if failed else 0


def _cmd_slot_run(args: argparse.Namespace) -> int:
    """One method of a parallel sweep on its slot (pipeline/parallel.py starts it; its output goes to the sweep)."""
    opts = parallel.enter_slot(json.loads(Path(args.spec).read_text()))
    with Monitoring.for_options(opts) as monitoring:
        summary, _ = run_method(opts, monitoring=monitoring)
    return 0 if summary["status"] == "ok" else 1


def register(sub) -> None:
    p = sub.add_parser("run", help="run one method end to end")
    p.add_argument("--method", required=True, help=f"one of: {', '.join(methods.names())}")
    add_option(p, "bundle_name")  # set by a calibrated parallel sweep (pipeline/slots.py)
    add_option(p, "baseline_result")
    add_run_options(p)
    p.set_defaults(func=_cmd_run)
    p = sub.add_parser("sweep", help="run several methods one after another under one run id")
    add_methods_option(p)
    add_option(p, "replicate")
    p.add_argument(
        "--gpus",
        default=None,
        metavar="0,1",
        help="run the methods side by side, one server per GPU (indices or UUIDs), each the next method "
        "of the queue (docs/usage.md, parallel sweep)",
    )
    p.add_argument(
        "--cpusets",
        default=None,
        metavar="0,1",
        help="CPU platforms: the same on CPU sets (a core or a range each: 0,1 or 0-3,4-7); with --gpus, "
        "the cores of each GPU's server",
    )
    p.add_argument(
        "--calibrate",
        action="store_true",
        help="with --gpus/--cpusets: each baseline also runs on every slot, each method is compared "
        "with its own slot's, and the report shows the slot-to-slot spread",
    )
    add_run_options(p)
    p.set_defaults(func=_cmd_sweep)
    p = sub.add_parser(
        "slot-run", help="one method of a parallel sweep on its slot (`sweep --gpus/--cpusets` runs it; not for users)"
    )
    p.add_argument("spec", help="the slot's job: options, slot and cores (JSON, written by the sweep)")
    p.set_defaults(func=_cmd_slot_run)
