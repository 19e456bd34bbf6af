"""`specstack sweep-k --method M --k 1,2,3,4`: one speculative method at several num_speculative_tokens.

Each K runs as its own method folder `<method>-k<K>` of the same run (its summary records the override in
`spec_override`), one after another, at the run's concurrency (default 1). The method's baseline runs first
unless the run already has it (or --no-baseline). Then the run's report is written; its "K sweep" section
plots TPOT and mean acceptance length against K and marks where the gain stops.

Needs run.Options.bundle_name (the published folder / summary method name); see _check_hook.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import re
from pathlib import Path

from . import methods, progress, run
from .bundle import read_summary
from .errors import UserError

_SAFE = re.compile(r"^[A-Za-z0-9_.-]+$")


def bundle_name(method: str, k: int) -> str:
    return f"{method}-k{k}"


def _check_hook() -> None:
    if "bundle_name" not in {f.name for f in dataclasses.fields(run.Options)}:
        raise UserError("this specstack's run.Options has no `bundle_name` field, so K variants cannot get their "
                        "own folders; sweep-k needs the run.py hook (Options.bundle_name)")


def parse_ks(text: str) -> list[int]:
    try:
        ks = [int(x) for x in str(text).split(",") if x.strip()]
    except ValueError:
        raise UserError(f"--k expects comma-separated positive integers, got {text!r}") from None
    if not ks or any(k <= 0 for k in ks):
        raise UserError(f"--k expects comma-separated positive integers, got {text!r}")
    if len(set(ks)) != len(ks):
        raise UserError(f"--k lists a value twice: {text!r}")
    return sorted(ks)


def plan_runs(opts: run.Options, ks: list[int]) -> list[tuple[str, dict]]:
    """(folder name, speculative override) per K; the user's own --spec-override keys are kept."""
    return [(bundle_name(opts.method, k), {**(opts.spec_override or {}), "num_speculative_tokens": k}) for k in ks]


def sweep_k(opts: run.Options, ks: list[int], *, with_baseline: bool = True, report: bool = True) -> list[dict]:
    """Run the baseline (unless present or disabled) and every K variant; finished ones are kept and skipped
    unless opts.force. Returns the summaries, baseline first."""
    _check_hook()
    if not methods.is_speculative(opts.method):
        raise UserError(f"{opts.method!r} has no speculative config; sweep-k needs a speculative method")
    if not _SAFE.match(opts.method):
        raise UserError(f"method name {opts.method!r} cannot be used in a folder name")
    run_dir = Path(opts.results_dir) / opts.run_id
    results = []
    base = methods.baseline_of(opts.method)
    if with_baseline and base:
        results += run.sweep(dataclasses.replace(opts, method=base, spec_override=None), [base])
    runs = plan_runs(opts, ks)
    for i, (name, override) in enumerate(runs):
        done = read_summary(run_dir / name)
        if done and done.get("status") == "ok" and not opts.force:
            run.console.print(f"[dim]{name}: already done in run {opts.run_id}, skipped (--force reruns it)[/]")
            results.append(done)
            continue
        # A server ran before this one (the baseline or an earlier K): wait, bounded, for its port.
        one = dataclasses.replace(opts, spec_override=override, bundle_name=name,
                                  port_wait=opts.port_release_timeout if opts.runtime == "native" else 0.0)
        summary, _ = run.run_method(one, index=i + 1, total=len(runs))
        results.append(summary)
        run.stop_if_port_blocked(summary, name, [n for n, _ in runs[i + 1:]])
    if report:
        from .report import write_report
        path = write_report(run_dir)
        run.console.print(f"report: {path}")
    return results


def gain_summary(run_dir: Path) -> list[dict]:
    """Where the gain stops, per method family, task and concurrency (from the report's K sweep table)."""
    from .report import build
    rep = build(run_dir, with_plots=False)
    seen, out = set(), []
    for r in rep.ksweep:
        key = (r["family"], r["task"], r["concurrency"])
        if key not in seen:
            seen.add(key)
            out.append({"method": r["family"], "task": r["task"], "concurrency": r["concurrency"],
                        "gain_stops_at_k": r["gain_stops_at_k"]})
    return out


def _cmd_sweep_k(args: argparse.Namespace) -> int:
    ks = parse_ks(args.k)
    args.k = None  # run.options_from_args reads --k as a single K; the list is handled here
    opts = run.options_from_args(args, args.method)
    with progress.live(run.console):
        results = sweep_k(opts, ks, with_baseline=not args.no_baseline)
    failed = [s["method"] for s in results if s["status"] != "ok"]
    run_dir = Path(opts.results_dir) / opts.run_id
    print(json.dumps({"run_id": opts.run_id, "failed": failed, "report": str(run_dir / "report.md"),
                      "gain_stops": gain_summary(run_dir)}))
    return 1 if failed else 0


def register(sub) -> None:
    p = sub.add_parser("sweep-k", conflict_handler="resolve",
                       help="one speculative method at several num_speculative_tokens, then the report")
    p.add_argument("--method", required=True, help=f"a speculative method: {', '.join(methods.names())}")
    run.add_run_options(p)
    p.add_argument("--k", required=True, help="comma-separated num_speculative_tokens values, e.g. 1,2,3,4")
    p.add_argument("--no-baseline", action="store_true", help="do not run the method's baseline first")
    p.set_defaults(func=_cmd_sweep_k, concurrency=(1,))
