"""The host-side helper's command line, argparse only: `python3 -m specstack.host ACTION` (how make runs it,
with the host's python3) and `specstack containers ACTION` (the same parser, registered in specstack's CLI).
A HostError becomes one line naming the fix and exit code 2."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import specstack.host
from specstack.host import HostError, buildx, disk, lifecycle, reproduction
from specstack.host.compose_stack import Stack
from specstack.host.engine import PROJECT, docker_client
from specstack.host.gpu import gpu_host_problems, wait_gpu_free
from specstack.host.image_lock import lock, read_lock
from specstack.host.image_ref import pin_problem
from specstack.host.provenance import record
from specstack.host.server_log import save_server_log
from specstack.host.stack import METHODS_TOML, PLATFORMS, Settings, Shell, sweep_methods
from specstack.host.targets import write_targets
from specstack.pipeline.slots import parallel, parse_slots, plan_jobs


def _record(args: argparse.Namespace) -> int:
    path = record(
        docker_client(args.docker),
        run_id=args.run_id,
        method=args.method,
        name=args.name,
        results=args.results,
        project=args.project,
        platform=args.platform,
        slot=args.slot,
        images=read_lock(args.images_lock) if args.images_lock else None,
    )
    print(f"host provenance: {path}")
    return 0


def _save_log(args: argparse.Namespace) -> int:
    path = save_server_log(
        docker_client(args.docker),
        run_id=args.run_id,
        method=args.method,
        name=args.name,
        results=args.results,
        project=args.project,
    )
    print(f"server log: {path}")
    return 0


def _check_gpu_host(args: argparse.Namespace) -> int:
    problems = gpu_host_problems(args.gpu, args.image, args.dtype)
    for p in problems:
        print(f"host check: {p}", file=sys.stderr)
    return 2 if problems else 0


def _check_buildx(args: argparse.Namespace) -> int:
    found = buildx.problem(buildx.version_text(args.docker), os.environ)
    if found:
        print(f"host check: {found}", file=sys.stderr)
    return 2 if found else 0


def _check_disk(args: argparse.Namespace) -> int:
    found = disk.check(args.docker, args.need_gb, args.purpose)
    if found:
        print(f"host check: {found}", file=sys.stderr)
    return 2 if found else 0


def _wait_gpu_free(args: argparse.Namespace) -> int:
    used = wait_gpu_free(args.gpu, max_used_mib=args.max_used_mib, timeout=args.timeout, poll=args.poll)
    print(f"GPU {args.gpu} free: {used} MiB in use")
    return 0


def _parallel(args: argparse.Namespace) -> int:
    failed = parallel(
        platform=args.platform,
        slots_text=args.slots,
        cores=os.cpu_count() or 1,
        methods=args.methods.split(),
        command=args.command,
        run_dir=args.results / args.run_id,
        cpusets=args.cpusets,
        baselines=dict(_label(b) for b in args.baselines.split()),
        calibrate=args.calibrate,
    )
    if failed:
        print(f"parallel sweep {args.run_id} failed: {' '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


def _check_slots(args: argparse.Namespace) -> int:
    slots = parse_slots(args.platform, args.slots, os.cpu_count() or 1, args.cpusets)
    plan_jobs(args.methods.split(), dict(_label(b) for b in args.baselines.split()), len(slots), args.calibrate)
    return 0


def _sweep_methods(args: argparse.Namespace) -> int:
    print(" ".join(sweep_methods(args.file)["mtp_methods" if args.mtp else "methods"]))
    return 0


def _targets(args: argparse.Namespace) -> int:
    write_targets(args.out, None if args.clear else args.target, dict(args.label))
    return 0


def _lock(args: argparse.Namespace) -> int:
    lock(args.file, keys=args.keys or None)
    return 0


def _check_lock(args: argparse.Namespace) -> int:
    problems = [p for ref in read_lock(args.file).values() if (p := pin_problem(ref))]
    for p in problems:
        print(f"not pinned: {p}", file=sys.stderr)
    return 1 if problems else 0


# make's knobs (services/compose.mk) as the compose step takes them, VAR=value: the Settings field of each.
KNOBS = {
    "PLATFORM": "platform",
    "MODEL_SET": "model_set",
    "GPU": "gpu",
    "CPUSET": "cpuset",
    "GPUS": "gpus",
    "CPUSETS": "cpusets",
    "CALIBRATE": "calibrate",
    "K": "k",
    "PREFIX_CACHING": "prefix_caching",
    "RUN_ARGS": "run_args",
    "REPORT_ARGS": "report_args",
    "GPU_FREE_MIB": "gpu_free_mib",
    "GPU_FREE_TIMEOUT": "gpu_free_timeout",
    "GPU_FREE_POLL": "gpu_free_poll",
    "IMAGES_LOCK": "images_lock",
    "WAIT_TIMEOUT": "wait_timeout",
    "SWEEP_METHODS": "sweep_methods",
    "RUN_ID": "run_id",
    "DOCKER": "docker",
    "SUBMAKE": "make",
}
# The step's own: the method (run, method, check), the service (logs), what make reproduce was given.
STEP_KNOBS = ("METHOD", "SERVICE", "RUN", "METHODS", "ALLOW_DRIFT", "SPEED_TOLERANCE")


def _knobs(pairs: list[tuple[str, str]]) -> dict[str, str]:
    knobs = dict(pairs)
    unknown = sorted(set(knobs) - set(KNOBS) - set(STEP_KNOBS))
    if unknown:
        raise HostError(f"unknown knob {unknown[0]}; known: {' '.join([*KNOBS, *STEP_KNOBS])}")
    if knobs.get("PLATFORM", "gpu") not in PLATFORMS:
        raise HostError(f"PLATFORM must be gpu (the default) or cpu, not '{knobs['PLATFORM']}'")
    return knobs


def make_dry_run() -> bool:
    """make -n (the recipe line runs all the same, marked `+`): its single-letter flags hold n."""
    first = (os.environ.get("MAKEFLAGS", "").split() or [""])[0]
    return bool(first) and not first.startswith("-") and "=" not in first and "n" in first


def _compose(args: argparse.Namespace) -> int:
    knobs = _knobs(args.knobs)
    # KNOBS names Settings' str fields only, never `methods` (a MethodsToml), which mypy cannot tell from a dict
    stack = Stack(Settings(**{KNOBS[k]: v for k, v in knobs.items() if k in KNOBS}))  # type: ignore[arg-type]
    step, method = args.step, knobs.get("METHOD", "")
    if step == "run":
        return lifecycle.run(stack, method)
    if step == "sweep":
        return lifecycle.sweep(stack)
    if step == "method":  # one method on an up stack; make -n prints its commands
        if make_dry_run():
            stack = stack.with_shell(Shell(dry_run=True))
        return lifecycle.one_method(stack, method, run_id=stack.s.run_id)
    if step == "check":
        return stack.check(method)
    if step == "prepare":
        return stack.prepare()
    if step == "reproduce":
        return lifecycle.reproduce(
            stack,
            run=Path(knobs.get("RUN", "")),
            run_id=stack.s.run_id,
            methods=knobs.get("METHODS"),
            allow_drift=bool(knobs.get("ALLOW_DRIFT")),
            speed_tolerance=knobs.get("SPEED_TOLERANCE", ""),
        )
    if step == "down":
        return stack.down()
    if step == "logs":
        return lifecycle.logs(stack, knobs.get("SERVICE", ""))
    return lifecycle.status(stack)


def _reproduce_plan(args: argparse.Namespace) -> int:
    """Exit NATIVE (3) for a native run; 0 with the plan written; 2 with the reason."""
    planned = lifecycle.plan_reproduction(
        args.run,
        args.run_id,
        methods=args.methods,
        allow_drift=args.allow_drift,
        say=print,
        results=args.results,
        out=args.out,
    )
    return reproduction.NATIVE if planned is None else 0


ACTIONS = {
    "record": _record,
    "save-log": _save_log,
    "check-gpu-host": _check_gpu_host,
    "check-buildx": _check_buildx,
    "check-disk": _check_disk,
    "wait-gpu-free": _wait_gpu_free,
    "parallel": _parallel,
    "check-slots": _check_slots,
    "sweep-methods": _sweep_methods,
    "targets": _targets,
    "lock": _lock,
    "check-lock": _check_lock,
    "reproduce-plan": _reproduce_plan,
    "compose": _compose,
}


def run(args: argparse.Namespace) -> int:
    try:
        return ACTIONS[args.containers_cmd](args)
    except HostError as e:
        print(f"specstack containers: {e}", file=sys.stderr)
        return 2
    except PermissionError as e:  # e.g. ./results made by root (a compose call before make's compose-prepare)
        print(
            f"specstack containers: cannot write {e.filename}: permission denied; it must belong to the user "
            f"running make (sudo chown -R $(id -u):$(id -g) {e.filename})",
            file=sys.stderr,
        )
        return 2


def _label(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


def _method_options(p: argparse.ArgumentParser) -> None:
    """Which method of which run, in which bundle folder and compose project (record, save-log)."""
    p.add_argument("--run-id", required=True, help="the run: results/<run-id>/")
    p.add_argument("--method", required=True, help="the method whose server container it is")
    p.add_argument("--name", default=None, help="the result's folder when not the method's (a calibration run)")
    p.add_argument("--results", type=Path, default=Path("results"), help="results folder (default: results/)")
    p.add_argument(
        "--project",
        default=PROJECT,
        help="the compose project of the containers (default: $COMPOSE_PROJECT_NAME or specstack)",
    )


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="containers_cmd", required=True, metavar="ACTION")
    r = sub.add_parser("record", help="write results/<run-id>/host-provenance/<method>.json")
    _method_options(r)
    r.add_argument(
        "--docker",
        choices=("auto", "sdk", "cli"),
        default="auto",
        help="how to reach Docker: the SDK if importable (auto), or the CLI named by $DOCKER",
    )
    r.add_argument(
        "--platform",
        default="gpu-container",
        choices=("gpu-container", "cpu-container"),
        help="the serve platform of the containers (methods.toml): GPU or CPU facts",
    )
    r.add_argument("--slot", default=None, help="parallel sweep: the method's GPU or CPU set (into the manifest)")
    r.add_argument(
        "--images-lock",
        type=Path,
        default=None,
        help="the lock file the stack runs from: each image's id and registry digests are recorded "
        "(make reproduce pulls them by digest)",
    )
    sl = sub.add_parser(
        "save-log",
        help="write results/<run-id>/host-provenance/<method>.server.log "
        "(this start's lines of the method's server container)",
    )
    _method_options(sl)
    sl.add_argument(
        "--docker",
        choices=("auto", "sdk", "cli"),
        default="auto",
        help="how to reach Docker: the SDK if importable (auto), or the CLI named by $DOCKER",
    )
    hc = sub.add_parser("check-gpu-host", help="refuse a driver or GPU the vLLM image cannot use (before pulling)")
    hc.add_argument(
        "--gpu",
        default=os.environ.get("SPECSTACK_GPU", "0"),
        help="the GPU the server will use, as nvidia-smi -i takes it (default: $SPECSTACK_GPU or 0)",
    )
    hc.add_argument("--image", required=True, help="the VLLM_IMAGE reference that will be pulled")
    hc.add_argument(
        "--dtype",
        default="bfloat16",
        help="the dtype the server will run (its compute-capability floor; default bfloat16)",
    )
    bx = sub.add_parser("check-buildx", help="refuse a buildx plugin Docker Compose will not build with")
    bx.add_argument("--docker", default=os.environ.get("DOCKER", "docker"), help="the docker CLI (default: docker)")
    dk = sub.add_parser("check-disk", help="refuse a build that would fill the disk Docker keeps its images on")
    dk.add_argument("--docker", default=os.environ.get("DOCKER", "docker"), help="the docker CLI (default: docker)")
    dk.add_argument("--need-gb", type=float, required=True, help="the free space the build needs, in GB")
    dk.add_argument("--purpose", required=True, help="what needs it, as the message names it (a make command)")
    w = sub.add_parser("wait-gpu-free", help="wait (bounded) until a GPU's memory is released")
    w.add_argument(
        "--gpu",
        default=os.environ.get("SPECSTACK_GPU", "0"),
        help="the GPU, as nvidia-smi -i takes it (default: $SPECSTACK_GPU or 0)",
    )
    w.add_argument(
        "--max-used-mib",
        type=int,
        default=1024,
        help="free: at most this many MiB in use on two polls in a row (default 1024)",
    )
    w.add_argument("--timeout", type=float, default=300, help="seconds before giving up (default 300)")
    w.add_argument("--poll", type=float, default=2.0, help="seconds between nvidia-smi polls")
    pa = sub.add_parser("parallel", help="run a sweep's methods on several GPUs or CPU sets at once (a queue)")
    pa.add_argument(
        "--platform",
        default="gpu-container",
        choices=("gpu-container", "cpu-container"),
        help="GPU slots (--slots are GPUs) or CPU slots (--slots are CPU sets)",
    )
    pa.add_argument("--slots", required=True, help="GPUS (0,1 or GPU-UUIDs) or CPUSETS (0,1 or 0-3,4-7)")
    pa.add_argument("--cpusets", default="", help="GPU: one CPU set per GPU for its server (optional)")
    pa.add_argument("--methods", required=True, help="the methods, space-separated, in queue order")
    pa.add_argument(
        "--baselines",
        default="",
        metavar="'METHOD=BASELINE ...'",
        help="each method's baseline (methods.toml; a baseline itself is not listed)",
    )
    pa.add_argument(
        "--calibrate",
        action="store_true",
        help="run each baseline on every slot and compare each method on its own slot",
    )
    pa.add_argument("--run-id", required=True, help="the sweep's run: results/<run-id>/")
    pa.add_argument("--results", type=Path, default=Path("results"), help="results folder (default: results/)")
    pa.add_argument(
        "command",
        nargs="+",
        help="the one-method command; {method}, {name} (its result folder), "
        "{baseline} (the result it is compared with), {slot}, {cpuset}, "
        "{index} filled in",
    )
    cs = sub.add_parser("check-slots", help="refuse a GPUS or CPUSETS value before anything starts")
    cs.add_argument(
        "--platform",
        default="gpu-container",
        choices=("gpu-container", "cpu-container"),
        help="GPU slots (--slots are GPUs) or CPU slots (--slots are CPU sets)",
    )
    cs.add_argument("--slots", required=True, help="GPUS (0,1 or GPU-UUIDs) or CPUSETS (0,1 or 0-3,4-7)")
    cs.add_argument("--cpusets", default="", help="GPU: one CPU set per GPU for its server (optional)")
    cs.add_argument("--methods", default="", help="the sweep's methods (with --calibrate: each baseline present)")
    cs.add_argument(
        "--baselines",
        default="",
        metavar="'METHOD=BASELINE ...'",
        help="each method's baseline (methods.toml; a baseline itself is not listed)",
    )
    cs.add_argument(
        "--calibrate", action="store_true", help="check as a calibrated sweep: each baseline runs on every slot"
    )
    sm = sub.add_parser(
        "sweep-methods",
        help="print the default methods of a sweep, space-separated: methods.toml's "
        "[sweep] methods (--mtp: mtp_methods); make sweep's SWEEP_METHODS",
    )
    sm.add_argument("--mtp", action="store_true", help="mtp_methods (make's SWEEP_MTP_METHODS), run after them")
    sm.add_argument("--file", type=Path, default=METHODS_TOML, help="the methods.toml to read (default: services/'s)")
    t = sub.add_parser("targets", help="write the Prometheus file_sd target file")
    t.add_argument("--out", type=Path, required=True, help="the target file Prometheus's file_sd reads")
    g = t.add_mutually_exclusive_group(required=True)
    g.add_argument("--target", help="host:port of the vLLM server")
    g.add_argument("--clear", action="store_true", help="no server: write []")
    t.add_argument(
        "--label",
        type=_label,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a label of the target's series (repeatable), e.g. method=ngram",
    )
    lk = sub.add_parser("lock", help="resolve every image tag of a lock file to its digest")
    lk.add_argument("--file", type=Path, default=Path("images.lock"), help="the lock file (default: images.lock)")
    lk.add_argument("--keys", nargs="*", metavar="NAME_IMAGE", help="pin only these lines (default: all)")
    rp = sub.add_parser(
        "reproduce-plan",
        help="make reproduce: the recorded methods, K and images (by digest) of a compose run; exit 3 for a native run",
    )
    rp.add_argument("--run", type=Path, required=True, help="the run folder (under --results) or its id")
    rp.add_argument("--run-id", required=True, help="the reproduction's run id")
    rp.add_argument("--results", type=Path, default=Path("results"), help="results folder (default: results/)")
    rp.add_argument(
        "--out",
        type=Path,
        default=Path(".specstack/reproduce"),
        help="folder the plan and its lock file are written to (default: .specstack/reproduce)",
    )
    rp.add_argument("--methods", default=None, help="a subset of the run's methods (space or comma separated)")
    rp.add_argument(
        "--allow-drift", action="store_true", help="plan it even where this machine differs from the recorded one"
    )
    ck = sub.add_parser("check-lock", help="fail if an image of the lock file is not pinned")
    ck.add_argument("--file", type=Path, default=Path("images.lock"), help="the lock file (default: images.lock)")
    _compose_options(
        sub.add_parser(
            "compose",
            help="the compose stack's lifecycle: make run, sweep, down, logs, "
            "status, reproduce (services/compose.mk calls it)",
        )
    )


STEPS = ("run", "sweep", "method", "check", "prepare", "reproduce", "down", "logs", "status")


def _compose_options(c: argparse.ArgumentParser) -> None:
    c.add_argument("step", choices=STEPS, help="the make target it does: " + ", ".join(STEPS))
    c.add_argument(
        "knobs",
        nargs="*",
        type=_label,
        metavar="VAR=value",
        help="make's knobs, as make takes them: " + " ".join([*KNOBS, *STEP_KNOBS]),
    )


def register(subparsers) -> None:
    p = subparsers.add_parser("containers", help="host-side helpers of the GPU stack (provenance, GPU, lock)")
    add_arguments(p)
    p.set_defaults(func=run)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m specstack.host", description=specstack.host.__doc__.splitlines()[0])
    add_arguments(p)
    return run(p.parse_args(argv))
