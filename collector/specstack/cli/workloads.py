"""`specstack workloads`: write the built-in code and chat workloads, or named datasets (--dataset), as JSONL (to
read, or to edit and pass back with --workload)."""

from __future__ import annotations

from pathlib import Path

from specstack.cli.options import add_option
from specstack.config.workloads import sha256, write_defaults
from specstack.datasets.tasks import parse_spec, write_task


def _cmd(a) -> int:
    sizes = dict(
        num_prompts=a.num_prompts, perf_output_len=a.perf_output_len, acceptance_max_tokens=a.acceptance_max_tokens
    )
    if a.datasets:
        paths = [p for spec in map(parse_spec, a.datasets) for p in write_task(a.out, spec, **sizes)]
    else:
        paths = [Path(p) for task in write_defaults(a.out, **sizes).values() for p in task.hashes()]
    for path in paths:
        print(f"{sha256(path)}  {path}")
    return 0


def register(sub) -> None:
    p = sub.add_parser("workloads", help="write the built-in code and chat workloads (or --dataset's) as JSONL")
    p.add_argument(
        "--out",
        type=Path,
        default=Path("workloads"),
        help="folder the JSONL files are written to, a perf and an acceptance file per task (default: workloads/)",
    )
    for name in ("num_prompts", "perf_output_len", "acceptance_max_tokens", "datasets"):  # as run's
        add_option(p, name)
    p.set_defaults(func=_cmd)
