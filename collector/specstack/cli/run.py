"""`specstack run` (one method) and `specstack sweep` (several, strictly one after another, one run id)."""
from __future__ import annotations

import argparse
import dataclasses
import json

from rich.console import Console

from specstack.cli import progress
from specstack.cli.options import add_run_options, options_from_args
from specstack.config import methods
from specstack.report import console_table
from specstack.runs.method_run import console, run_method
from specstack.runs.monitoring import Monitoring
from specstack.runs.options import REPLICATE
from specstack.runs.sweep import sweep


def _tables(opts) -> None:
    """The run's tables at its end, on stderr (stdout keeps its one JSON line), wide enough when piped."""
    run_dir = opts.results_dir / opts.run_id
    if run_dir.is_dir():
        console_table.print_run(run_dir, Console(stderr=True, width=max(150, console.width)))
        console_table.seal_run(run_dir)   # tables.txt, then SHA256SUMS over every file of the run


def _cmd_run(args: argparse.Namespace) -> int:
    opts = dataclasses.replace(options_from_args(args, args.method), bundle_name=args.bundle_name,
                               baseline_result=args.baseline_result)
    with progress.live(console), Monitoring.for_options(opts) as monitoring:
        summary, path = run_method(opts, monitoring=monitoring)
    _tables(opts)
    print(json.dumps({"status": summary["status"], "crosscheck_ok": summary["crosscheck"]["ok"],
                      "bundle": str(path)}))
    return 0 if summary["status"] == "ok" else 1


def _cmd_sweep(args: argparse.Namespace) -> int:
    names = [m for m in args.methods.split(",") if m]
    opts = options_from_args(args, names[0])
    with progress.live(console):
        results = sweep(opts, names)
    _tables(opts)
    failed = [s["method"] for s in results if s["status"] != "ok"]
    print(json.dumps({"run_id": opts.run_id, "failed": failed}))
    return 1 if failed else 0


def register(sub) -> None:
    p = sub.add_parser("run", help="run one method end to end")
    p.add_argument("--method", required=True, help=f"one of: {', '.join(methods.names())}")
    # Set by a calibrated parallel sweep (host/slots.py): a baseline measured on slot i is results/<run>/<b>-slot<i>,
    # and a method on slot i is compared with that one.
    p.add_argument("--bundle-name", default=None, metavar="NAME",
                   help="write the result as results/<run-id>/NAME (default: the method's name)")
    p.add_argument("--baseline-result", default=None, metavar="NAME",
                   help="compare with the baseline result NAME of this run instead of the method's own baseline "
                        "(it must be a run of that baseline: a parallel sweep's same-slot calibration run)")
    add_run_options(p)
    p.set_defaults(func=_cmd_run)
    p = sub.add_parser("sweep", help="run several methods one after another under one run id")
    p.add_argument("--methods", default="baseline,ngram,draft_model,eagle3,suffix")
    p.add_argument("--replicate", choices=REPLICATE, default="repeats",
                   help="repeats: --repeats bench repeats back to back in one server session per method (fast; "
                        "the intervals leave session-to-session variance out); sessions: each repeat a server "
                        "session of its own, methods interleaved with their baseline (ABBA: B M, M B, ...), intervals "
                        "from resampling session pairs")
    add_run_options(p)
    p.set_defaults(func=_cmd_sweep)
