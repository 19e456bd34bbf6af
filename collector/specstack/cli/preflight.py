"""`specstack preflight`: check a method's `vllm serve` arguments with vLLM 0.32.0's own parser and config
classes before any server starts (what is checked: server/preflight.py).

Runs inside the method's own server image too, where specstack is mounted, not installed (`make run` does so
before the server starts): `python3 -m specstack.cli.preflight --method suffix --platform gpu-container`.
Imports nothing beyond the standard library, config/ and server/preflight.py for that reason; its serve-plan
options are run's and sweep's (config/flags.py). --spec-override and --prefix-caching stay its own: the server
container passes them as environment variables, the second three-valued (unset: methods.toml's [common]).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from specstack.config.flags import add_plan_options
from specstack.config.methods import MethodError, ServePlan, build, load, resolve_method, serve_args
from specstack.server.preflight import Report, run_checks


def _plans(args: argparse.Namespace) -> list[tuple[str, ServePlan | None, str | None]]:
    cfg = load()
    names = list(cfg["methods"]) if args.all else [args.method]
    override = None
    if args.spec_override:
        try:
            override = json.loads(args.spec_override)
        except json.JSONDecodeError as e:
            return [(n, None, f"--spec-override is not valid JSON ({e.msg})") for n in names]
    out: list[tuple[str, ServePlan | None, str | None]] = []
    for name in names:
        try:
            caching = serve_args.prefix_caching_value(args.prefix_caching)
            name = resolve_method(cfg, name)
            is_spec = "speculative-config" in cfg["methods"][name]
            plan = build(
                name,
                model_set_name=args.model_set,
                platform=args.platform,
                models_dir=args.models_dir,
                spec_override=override if is_spec else None,
                cfg=cfg,
                prefix_caching=caching,
            )
            out.append((name, plan, None))
        except MethodError as e:
            out.append((name, None, f"{e}"))
    return out


def _cmd(args: argparse.Namespace) -> int:
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
    if not args.all and not args.method:
        print("specstack preflight: give --method M or --all", file=sys.stderr)
        return 2
    reports = []
    for name, plan, error in _plans(args):
        if error is not None or plan is None:
            report = Report(name, errors=[f"services/methods.toml: {error}"])
        else:
            report = run_checks(plan, deep=args.deep)
        reports.append(report)
        if not args.json:
            status = "ok" if report.ok else "FAILED"
            print(f"preflight {name} ({args.model_set}, {args.platform}): {status} in {report.seconds:.1f} s")
            for e in report.errors:
                print(f"  error: {e}")
            for s in report.skipped:
                print(f"  skipped: {s}")
            if args.verbose:
                for c in report.checked:
                    print(f"  checked: {c}")
    if args.json:
        print(json.dumps([r.to_dict() for r in reports], indent=2))
    return 0 if all(r.ok for r in reports) else 2


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--method", help="a method of services/methods.toml")
    p.add_argument("--all", action="store_true", help="every method")
    add_plan_options(p)  # --model-set, --platform, --models-dir: declared once, as run and sweep have them
    p.add_argument(
        "--spec-override",
        default=os.environ.get("SPECSTACK_SPEC_OVERRIDE") or None,
        help="JSON merged into the speculative config (as the server would get it)",
    )
    p.add_argument(
        "--prefix-caching",
        action="store_const",
        const="1",
        default=os.environ.get(serve_args.PREFIX_CACHING_ENV) or None,
        help="check with enable-prefix-caching, as a run's --prefix-caching serves it (default: "
        "$SPECSTACK_PREFIX_CACHING, 1 or 0, else methods.toml's [common])",
    )
    p.add_argument(
        "--deep",
        choices=("auto", "off", "force"),
        default="auto",
        help="engine config build: auto (when configs are on disk and the platform matches), "
        "off, or force (also for another platform)",
    )
    p.add_argument("--json", action="store_true", help="print the reports as JSON")
    p.add_argument("-v", "--verbose", action="store_true", help="also list what was checked")


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "preflight",
        help="check a method's vLLM arguments before starting a server",
        description=__doc__.splitlines()[0],
    )
    add_arguments(p)
    p.set_defaults(func=_cmd)


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
    p = argparse.ArgumentParser(prog="python3 -m specstack.cli.preflight", description=__doc__.splitlines()[0])
    add_arguments(p)
    return _cmd(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
