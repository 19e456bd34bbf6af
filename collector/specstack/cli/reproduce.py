"""`specstack reproduce RUN`: re-run what a run's bundle recorded, on this machine, refuse on a changed
environment unless --allow-drift, and end with `compare` against the original; exit 1 when a figure did not
reproduce (exact-by-design figures not identical, or speed beyond the tolerance), 2 on a user error."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from specstack.cli import progress
from specstack.cli.options import default_run_id
from specstack.pipeline import reproduce
from specstack.pipeline.sweep import console
from specstack.results.reader import resolve_run_dir


def _tolerance(text: str) -> float:
    try:
        value = float(text.strip().rstrip("%"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a percentage such as 15%, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"the tolerance must be > 0 %, got {text!r}")
    return value / 100


def _print_verdict(out: dict) -> int:
    v = out["verdict"]
    for r in v["exact"] + v["speed"]:
        if r["ok"] is False:
            console.print(f"[bold red]not reproduced[/]: {r['figure']}: {r['verdict']}")
    for d in v["drift"]:
        console.print(f"[yellow]ran despite drift[/]: {d['fact']}")
    print(
        json.dumps(
            {
                "reproduced": v["reproduced"],
                "run": str(out["run_dir"]),
                "exact": f"{sum(r['ok'] for r in v['exact'])}/{len(v['exact'])} identical",
                "speed": f"{sum(r['ok'] is True for r in v['speed'])} within ±{100 * v['tolerance']:g} % "
                f"or noise, {sum(r['ok'] is False for r in v['speed'])} beyond, "
                f"{sum(r['ok'] is None for r in v['speed'])} not judged (busy host, degenerate TPOT)",
                "compare_md": str(out["files"]["md"]),
                "verdict": str(out["files"]["verdict"]),
            }
        )
    )
    return 0 if v["reproduced"] else 1


def _cmd_reproduce(args: argparse.Namespace) -> int:
    original = resolve_run_dir(args.run, args.results_dir).resolve()
    results = Path(args.results_dir) if args.results_dir else original.parent
    if args.measured:
        return _print_verdict(
            reproduce.conclude(original, resolve_run_dir(args.measured, results).resolve(), args.speed_tolerance)
        )
    run_id = args.run_id or f"{original.name}-repro-{default_run_id()}"
    methods = [m for m in args.methods.split(",") if m] if args.methods else None
    watch = {
        k: v for k, v in (("prometheus_url", args.prometheus_url), ("windows_port", args.windows_port)) if v is not None
    }
    p = reproduce.plan(
        original,
        run_id=run_id,
        results_dir=results,
        methods=methods,
        models_dir=args.models_dir,
        port=args.port,
        url=args.url,
        watch=watch,
    )
    if p.not_recorded:
        console.print(
            f"[yellow]{original.name} does not record {', '.join(p.not_recorded)}: specstack's "
            "defaults are used for those[/]"
        )
    for note in p.skipped:
        console.print(f"[yellow]not reproduced: {note}[/]")
    with progress.live(console):
        out = reproduce.run(p, allow_drift=args.allow_drift, tolerance=args.speed_tolerance)
    if out["verdict"] is None:  # one server of a compose reproduction: measured; make compares at the end
        print(json.dumps({"measured": [n for n, _ in p.entries], "run": str(out["run_dir"]), "failed": out["failed"]}))
        return 1 if out["failed"] else 0
    return _print_verdict(out)


def register(sub) -> None:
    p = sub.add_parser("reproduce", help="re-run a recorded run on this machine and compare it with the original")
    p.add_argument("run", metavar="RUN", help="the run to reproduce: a run folder, or a run id under --results")
    p.add_argument("--run-id", default=None, help="the reproduction's run id (default: <run>-repro-<time>)")
    p.add_argument(
        "--results",
        dest="results_dir",
        type=Path,
        default=None,
        help="where run ids are looked up and the reproduction is written (default: beside RUN)",
    )
    p.add_argument("--methods", default=None, help="comma-separated subset of the run's methods (default: all)")
    p.add_argument(
        "--allow-drift",
        action="store_true",
        help="run even where this machine differs from the recorded one (listed and recorded)",
    )
    p.add_argument(
        "--speed-tolerance",
        type=_tolerance,
        default=reproduce.SPEED_TOLERANCE,
        help="how far a bench figure's median may move and still count as reproduced (default "
        f"{100 * reproduce.SPEED_TOLERANCE:g}%%; docs/reproduce.md says where it comes from)",
    )
    p.add_argument(
        "--models-dir",
        default=None,
        help="where the run's local models are on this machine ({models} in methods.toml; default: as recorded)",
    )
    p.add_argument("--port", type=int, default=None, help="native server port (default: as recorded)")
    # The compose form (`make reproduce` drives these; docs/reproduce.md): one server per method, then the verdict.
    p.add_argument(
        "--url",
        default=None,
        help="compose reproduction: measure the server at URL (started by make from the recorded "
        "images) for the method(s) of --methods into --run-id; no compare until --measured",
    )
    p.add_argument(
        "--measured",
        metavar="RUN",
        default=None,
        help="compare RUN, a reproduction already measured (make reproduce), with the original and judge it",
    )
    p.add_argument("--windows-port", type=int, default=None, help="serve run-window gauges for Prometheus")
    p.add_argument("--prometheus-url", default=None, help="also keep Prometheus's view (as `specstack run`)")
    p.set_defaults(func=_cmd_reproduce)
