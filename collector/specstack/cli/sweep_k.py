"""`specstack sweep-k --method M --k 1,2,3,4`: one speculative method at several num_speculative_tokens, each K
as its own folder `<method>-k<K>` of the same run, at the run's concurrency (default 1); the method's baseline
first unless the run has it (or --no-baseline); then the report, whose "K sweep" section marks where the gain
stops and shows the best K per load. --k-per-load also runs that per-load schedule as `<method>-kload`."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from specstack.cli import progress
from specstack.cli.options import add_run_options, options_from_args
from specstack.config import methods
from specstack.pipeline.sweep import console, parse_ks, schedule_name, sweep_k
from specstack.report.ksweep import schedule_for
from specstack.results import layout


def _cmd_sweep_k(args: argparse.Namespace) -> int:
    ks = parse_ks(args.ks)
    opts = options_from_args(args, args.method)
    with progress.live(console):
        results = sweep_k(opts, ks, with_baseline=not args.no_baseline, per_load=args.k_per_load)
    failed = [s["method"] for s in results if s["status"] != "ok"]
    run_dir = Path(opts.results_dir) / opts.run_id
    from specstack.report.build import gain_summary  # pandas and matplotlib: not in the sweep's start-up

    out: dict[str, object] = {
        "run_id": opts.run_id,
        "failed": failed,
        "report": str(run_dir / layout.REPORT_MD),
        "gain_stops": gain_summary(run_dir),
    }
    if args.k_per_load:
        ran = next((s["method"] for s in results if s["method"] == schedule_name(opts.method)), None)
        sched, verdict = schedule_for(run_dir, opts.method)
        out["k_per_load"] = {"schedule": sched, "verdict": verdict, "schedule_run": ran}
    print(json.dumps(out))
    return 1 if failed else 0


def register(sub) -> None:
    p = sub.add_parser("sweep-k", help="one speculative method at several num_speculative_tokens, then the report")
    p.add_argument("--method", required=True, help=f"a speculative method: {', '.join(methods.names())}")
    add_run_options(p, single_k=False)
    p.add_argument(
        "--k",
        dest="ks",
        required=True,
        metavar="K,K,...",
        help="comma-separated num_speculative_tokens values, e.g. 1,2,3,4",
    )
    p.add_argument("--no-baseline", action="store_true", help="do not run the method's baseline first")
    p.add_argument(
        "--k-per-load",
        action="store_true",
        help="then run the best K per concurrency band (derived from these cells as vLLM's "
        "tune_speculative_k does) as <method>-kload; needs --repeats 3 and --concurrency 1,N",
    )
    p.set_defaults(func=_cmd_sweep_k, concurrency=(1,))
