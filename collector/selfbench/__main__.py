"""`python -m selfbench harness|load`: run a harness benchmark, print its table, keep the full JSON."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEFAULT_MODELS = Path(os.environ.get("SPECSTACK_TEST_MODELS", REPO / ".specstack" / "test-models"))


def _harness(args: argparse.Namespace) -> dict:
    from selfbench.harness import bench_harness
    from selfbench.harness_runs import Plan

    return bench_harness(
        Plan.make(args.quick, args.method),
        models_dir=Path(args.models_dir).resolve(),
        work=args.work,
        max_load=args.max_load,
        load_wait=args.load_wait,
    )


def _load(args: argparse.Namespace) -> dict:
    from selfbench.load import Plan, run_all
    from selfbench.load_report import verdicts

    report = run_all(
        Plan.make(args.quick, args.requests, args.bench_minutes),
        models_dir=Path(args.models_dir).resolve(),
        work=args.work,
    )
    report["verdicts"] = verdicts(report)
    return report


def _format(args: argparse.Namespace, report: dict) -> str:
    if args.bench == "harness":
        from selfbench.harness_report import format_report
    else:
        from selfbench.load_report import format_report
    return format_report(report)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m selfbench", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="bench", required=True)
    p = sub.add_parser("harness", help="the harness's own cost: monitoring, overhead, start-up, collector scale")
    p.add_argument("--quick", action="store_true", help="small sizes (a few minutes) instead of ~15 min")
    p.add_argument("--method", default="draft_model", help="method whose server is measured (tiny models)")
    p.add_argument(
        "--max-load",
        type=float,
        default=None,
        help="wait until the 1-minute load average is below this before measuring",
    )
    p.add_argument("--load-wait", type=float, default=600.0, help="longest wait for --max-load, seconds")
    p.set_defaults(run=_harness, out="results/bench-harness.json")
    p = sub.add_parser(
        "load",
        help="the collector under load: memory over 1,000 acceptance requests and a "
        "20-minute bench window, and parsing a several-MB /metrics page",
    )
    p.add_argument("--requests", type=int, default=None, help="acceptance requests in the window (default 1000)")
    p.add_argument("--bench-minutes", type=float, default=None, help="length of the bench window (default 20)")
    p.add_argument("--quick", action="store_true", help="200 requests and a 2-minute bench (~5 min in all)")
    p.set_defaults(run=_load, out="results/bench-load.json")
    for p in sub.choices.values():
        p.add_argument("--out", help="the full report as JSON (written atomically; default results/bench-NAME.json)")
        p.add_argument("--models-dir", default=str(DEFAULT_MODELS), help="tiny models folder")
        p.add_argument("--keep", action="store_true", help="keep the work folder (logs, bundles, Prometheus data)")
    return parser


def main(argv: list[str] | None = None) -> int:
    from specstack.results.files import atomic_write_json

    args = build_parser().parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    args.work = Path(tempfile.mkdtemp(prefix=f"specstack-bench-{args.bench}-"))
    try:
        report = args.run(args)
    finally:
        if args.keep:
            print(f"work folder kept: {args.work}", file=sys.stderr)
        else:
            shutil.rmtree(args.work, ignore_errors=True)
    atomic_write_json(Path(args.out), report)
    print(_format(args, report))
    print(f"report: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
