"""`specstack` command line. Each subcommand lives in the module that does the work; this file only
dispatches. A module joins by defining `register(subparsers)` that adds its parser and sets `func`."""
from __future__ import annotations

import argparse
import importlib
import os
import sys

from .errors import UserError
from .methods import MethodError
from .workloads import WorkloadError

# Modules that contribute subcommands, in the order `specstack --help` lists them.
COMMAND_MODULES = (
    "specstack.run",          # run, sweep
    "specstack.demo",         # demo, table
    "specstack.workloads",    # workloads
    "specstack.tiny_models",  # tiny-models
    "specstack.preflight",    # preflight
    "specstack.report",       # report
    "specstack.ksweep",       # sweep-k
    "specstack.containers",   # containers (host-side facts for compose runs)
    "specstack.harness_bench",  # bench-harness (what measuring costs)
    "specstack.load_bench",  # bench-load (the collector under load)
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="specstack", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name == name:
                continue  # not built yet
            raise
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args) or 0
    except KeyboardInterrupt:
        print("specstack: interrupted", file=sys.stderr)
        return 130
    except (UserError, MethodError, WorkloadError) as e:
        print(f"specstack: error: {e}", file=sys.stderr)
        return 2


def entry() -> None:
    """Console-script entry. Once vLLM is imported (pre-flight, the bench client), triton's bindings print
    hundreds of "nanobind: leaked ..." lines at interpreter teardown; everything is written and flushed by
    then, so skip that teardown instead of burying the result under noise."""
    code = main()
    if "triton" in sys.modules:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    entry()
