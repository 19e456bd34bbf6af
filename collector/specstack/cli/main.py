"""`specstack COMMAND`: builds the parser from the command modules and dispatches; user errors become one
line naming the fix and exit code 2; a method run that broke unexpectedly (runs/outcome.py) one line and exit 1."""

from __future__ import annotations

import argparse
import os
import sys

from specstack import interrupts
from specstack.cli import (
    archive,
    compare,
    datasets,
    demo,
    k8s,
    models,
    preflight,
    probe_sampler,
    report,
    reproduce,
    run,
    slurm,
    sweep_k,
    tiny_models,
    workloads,
)
from specstack.config.methods import MethodError
from specstack.config.workloads import WorkloadError
from specstack.errors import UserError
from specstack.host import cli as host
from specstack.results import sweep_time
from specstack.runs.outcome import RunBroke

# In the order `specstack --help` lists them.
COMMANDS = (
    run,  # run, sweep
    demo,  # demo, table
    workloads,  # workloads
    datasets,  # datasets
    tiny_models,  # tiny-models
    models,  # models build (smollm2: the trained set; tiny)
    preflight,  # preflight
    probe_sampler,  # probe-sampler
    report,  # report
    compare,  # compare
    reproduce,  # reproduce
    archive,  # pack, verify
    sweep_k,  # sweep-k
    k8s,  # k8s generate, k8s gather (deploy/helm/specstack)
    slurm,  # slurm submit, slurm gather (job arrays, docs/slurm.md)
    host,  # containers (host-side facts for compose runs; stdlib only, also `python3 -m specstack.host`)
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="specstack", description="specstack command line")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMANDS:
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        with interrupts.as_exception():  # SIGTERM and SIGHUP clean up as Ctrl+C does
            return args.func(args) or 0
    except KeyboardInterrupt as e:
        name = getattr(e, "name", "SIGINT")
        print(
            f"specstack: interrupted ({name}); whatever it started is stopped, a method cut short is kept as "
            "<method>.failed-*",
            file=sys.stderr,
        )
        return getattr(e, "exit_code", 130)
    except (UserError, MethodError, WorkloadError) as e:
        print(f"specstack: error: {e}", file=sys.stderr)
        return 2
    except RunBroke as e:  # a method ended by an unexpected exception or an unwritable bundle, kept as failed
        print(f"specstack: error: {e}", file=sys.stderr)
        return e.exit_code


def entry() -> None:
    """Console-script entry. Once vLLM is imported (pre-flight, the bench client), triton's bindings print
    hundreds of "nanobind: leaked ..." lines at interpreter teardown; everything is written and flushed by
    then, so skip that teardown instead of burying the result under noise."""
    sweep_time.command_started()  # a sweep's start-up counts from this process's start (results/sweep_time.py)
    code = main()
    if "triton" in sys.modules:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    entry()
