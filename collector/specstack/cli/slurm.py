"""`specstack slurm submit|task|gather`: a sweep as Slurm job arrays, one task per method on the native runtime
(docs/slurm.md). `task` is what each array task runs; users call submit and gather."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from pathlib import Path

from specstack.cli.options import add_methods_option, default_run_id, sweep_methods
from specstack.config import methods
from specstack.errors import UserError
from specstack.results import run_lock
from specstack.results.reader import good_result, resolve_run_dir
from specstack.server.runtime import free_port
from specstack.slurm import gather, submit, task
from specstack.slurm.script import SbatchOptions


def _results(args: argparse.Namespace) -> Path:
    return Path(args.results_dir or os.environ.get("SPECSTACK_RESULTS", "results"))


def _run_argv(method: str, run_id: str, results: Path, run_args: list[str], port: int | None = None) -> list[str]:
    """The `specstack run` command line of one task: the same parser, options and code path as a native run."""
    return [
        "run",
        "--method",
        method,
        "--run-id",
        run_id,
        "--results",
        str(results),
        *(["--port", str(port)] if port is not None else []),
        *run_args,
    ]


def _check_run_args(names: list[str], run_id: str, results: Path, run_args: list[str]):
    """`specstack run`'s own parser and checks on every method's command line, before anything is submitted."""
    from specstack.cli.main import build_parser  # main imports this module
    from specstack.cli.options import options_from_args

    submit.check_run_args(run_args)
    for name in names:
        argv = _run_argv(name, run_id, results, run_args)
        try:
            args = build_parser().parse_args(argv)
        except SystemExit:  # argparse printed what is wrong
            raise UserError(
                f"--run-args {shlex.join(run_args)!r} is not accepted by `specstack run` (above); "
                "fix it, nothing was submitted"
            ) from None
        opts = options_from_args(args, name)
        opts.validate()
    return opts


def _cmd_submit(args: argparse.Namespace) -> int:
    cfg = methods.load()
    names = [methods.resolve_method(cfg, m) for m in sweep_methods(args).replace(" ", ",").split(",") if m]
    if not names:
        raise UserError("--methods names no method; e.g. --methods baseline,ngram,suffix")
    run_args = shlex.split(args.run_args or "")
    results = _results(args).resolve()
    run_id = args.run_id or default_run_id()
    opts = _check_run_args(names, run_id, results, run_args)
    gres = args.gres if args.gres is not None else ("gpu:1" if opts.platform.on_gpu else None)
    sbatch = SbatchOptions(
        partition=args.partition,
        time=args.time,
        gres=None if gres in ("", "none") else gres,
        cpus_per_task=args.cpus_per_task,
        mem=args.mem,
        account=args.account,
        qos=args.qos,
        max_parallel=args.max_parallel,
        extra=list(args.sbatch_args),
    )
    done = submit.submit(
        results / run_id, names, run_args, sbatch, specstack=args.specstack, baseline_of=methods.baseline_of
    )
    if done.done:
        print(f"already done in run {run_id}, not submitted: {', '.join(done.done)}", file=sys.stderr)
    print(json.dumps({"run_dir": str(done.run_dir), "arrays": done.arrays, "already_done": done.done}))
    return 0


def _cmd_task(args: argparse.Namespace) -> int:
    from specstack.cli.main import build_parser

    plan = task.read_plan(args.plan)
    method = task.method_of(plan, args.array)
    run_dir = Path(plan["results"]) / plan["run_id"]
    if good_result(run_dir, method) is not None:  # a result that came in since the submission is kept
        print(f"{method}: already done in run {plan['run_id']}; nothing to run", file=sys.stderr)
        return 0
    task.write_start_record(run_dir, method, task.start_record())
    # the tasks of one submission run at once by design: they share the run's lock (results/run_lock.py)
    os.environ[run_lock.TOKEN_ENV] = plan.get("lock_token") or run_lock.token()
    print(f"specstack slurm task: {method} of run {plan['run_id']}", file=sys.stderr, flush=True)
    run = build_parser().parse_args(
        _run_argv(method, plan["run_id"], Path(plan["results"]), plan["run_args"], port=free_port())
    )
    return run.func(run)


def _cmd_gather(args: argparse.Namespace) -> int:
    run_dir = gather.check_dir(resolve_run_dir(args.run, args.results_dir))
    got = gather.gather(run_dir)
    for method, status in sorted(got.missing.items()):
        print(f"{method}: {status} (see manifest.json methods.{method}.error)", file=sys.stderr)
    if got.ok:
        gather.finish(run_dir, report=args.report)
    print(json.dumps({"run_dir": str(run_dir), "ok": got.ok, "missing": got.missing, "facts_source": got.facts_source}))
    return 1 if got.missing else 0


def register(sub) -> None:
    s = sub.add_parser(
        "slurm",
        help="a sweep as Slurm job arrays (one task per method, native runtime); gather "
        "a run's tasks into one bundle (docs/slurm.md)",
    )
    ssub = s.add_subparsers(dest="slurm_command", required=True, metavar="SLURM_COMMAND")
    p = ssub.add_parser(
        "submit",
        help="submit the methods of a run that have no good result yet, as job arrays "
        "(baselines first); run again to resubmit only what is missing",
    )
    add_methods_option(p)
    p.add_argument("--run-id", default=None, help="results/<run-id>/ (default: a timestamp; a resubmit names it)")
    p.add_argument(
        "--results",
        dest="results_dir",
        type=Path,
        default=None,
        help="results folder on a file system every node mounts at the same path (default: "
        "$SPECSTACK_RESULTS or results/)",
    )
    p.add_argument(
        "--run-args",
        default="",
        metavar="'OPTIONS'",
        help='`specstack run` options for every task, one string, e.g. "--model-set tiny --platform '
        "cpu-native --tasks code\" (checked by `specstack run`'s parser before anything is submitted)",
    )
    p.add_argument("--partition", "-p", default=None, help="sbatch --partition (default: the cluster's)")
    p.add_argument("--time", "-t", default=None, help="each task's time limit (sbatch --time), e.g. 2:00:00")
    p.add_argument(
        "--gres",
        default=None,
        help="each task's generic resources (default gpu:1; none on a cpu-* platform; 'none' drops it)",
    )
    p.add_argument("--cpus-per-task", type=int, default=None, help="sbatch --cpus-per-task of each task")
    p.add_argument("--mem", default=None, help="sbatch --mem, e.g. 64G")
    p.add_argument("--account", "-A", default=None, help="sbatch --account to charge")
    p.add_argument("--qos", default=None, help="sbatch --qos")
    p.add_argument(
        "--max-parallel",
        type=int,
        default=None,
        metavar="N",
        help="at most N tasks of an array at once (sbatch --array=...%%N); 1: one method at a time",
    )
    p.add_argument(
        "--sbatch-arg",
        dest="sbatch_args",
        action="append",
        default=[],
        metavar="ARG",
        help="one more #SBATCH line, as sbatch takes it (repeatable), e.g. --sbatch-arg=--exclusive or "
        "a pyxis --sbatch-arg=--container-image=...",
    )
    p.add_argument(
        "--specstack",
        default=str(Path(sys.executable).with_name("specstack")),
        help="the specstack each task runs, on the shared file system (default: this one)",
    )
    p.set_defaults(func=_cmd_submit)
    t = ssub.add_parser("task", help="what each array task runs (its batch script calls it; not for users)")
    t.add_argument("plan", type=Path, help="the submission's plan (JSON, written by submit)")
    t.add_argument("array", help="which array of the plan (its methods; the task's SLURM_ARRAY_TASK_ID picks one)")
    t.set_defaults(func=_cmd_task)
    g = ssub.add_parser(
        "gather",
        help="check every task of a run against Slurm and the run folder, name what is "
        "missing in the manifest, write the report; exit 1 if a method is missing",
    )
    g.add_argument("run", metavar="RUN", help="the run folder, or its run id under --results")
    g.add_argument(
        "--results",
        dest="results_dir",
        type=Path,
        default=None,
        help="results folder holding run ids (default: $SPECSTACK_RESULTS or results/)",
    )
    g.add_argument(
        "--no-report",
        dest="report",
        action="store_false",
        help="skip report.md/.html (tables and SHA256SUMS are still written)",
    )
    g.set_defaults(func=_cmd_gather)
