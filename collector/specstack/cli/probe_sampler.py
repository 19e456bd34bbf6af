"""`specstack probe-sampler`: run the installed vLLM's rejection sampler on constructed distributions and say
whether its output distribution and acceptance rate are exact (probes/sampler.py; docs/sampler-probe.md).

Seconds, no model, no server; on whatever device the installed vLLM's platform uses (CPU build or CUDA).
Exit status: 0 the sampler agrees, 1 it does not (the verdict JSON names the failing shapes and the cause).
Runs inside a vLLM image too, where specstack is mounted rather than installed:
`python3 -m specstack.cli.probe_sampler --json probe.json` (imports only numpy, torch and vLLM beyond the
standard library).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def _cmd(args: argparse.Namespace) -> int:
    from specstack.probes.sampler import run_probe, summary
    from specstack.results.files import atomic_write_json

    report = run_probe()
    if args.json == "-":
        json.dump(report, sys.stdout, indent=2)
        sys.stdout.write("\n")
        print(summary(report), file=sys.stderr)
    else:
        if args.json:
            atomic_write_json(Path(args.json), report)
        print(summary(report))
        if args.json:
            print(f"verdict JSON: {args.json}")
    return 0 if report["verdict"] == "pass" else 1


def _add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--json",
        metavar="PATH",
        help="also write the full verdict as JSON to PATH ('-': JSON on stdout, the summary on stderr)",
    )
    p.set_defaults(func=_cmd)


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "probe-sampler",
        help="check the installed vLLM's rejection sampler (seconds, no model)",
        description=__doc__.splitlines()[0],
    )
    _add_arguments(p)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m specstack.cli.probe_sampler", description=__doc__.splitlines()[0])
    _add_arguments(p)
    args = p.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
