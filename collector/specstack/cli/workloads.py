"""`specstack workloads`: write the built-in code and chat workloads as JSONL (to read, or to edit and pass back
with --workload)."""
from __future__ import annotations

from pathlib import Path

from specstack.config.workloads import (DEFAULT_ACCEPTANCE_MAX_TOKENS, DEFAULT_NUM_PROMPTS, DEFAULT_PERF_OUTPUT_LEN,
                                        write_defaults)


def _cmd(a) -> int:
    for task in write_defaults(a.out, num_prompts=a.num_prompts, perf_output_len=a.perf_output_len,
                               acceptance_max_tokens=a.acceptance_max_tokens).values():
        for path, digest in task.hashes().items():
            print(f"{digest}  {path}")
    return 0


def register(sub) -> None:
    p = sub.add_parser("workloads", help="write the built-in code and chat workloads as JSONL")
    p.add_argument("--out", type=Path, default=Path("workloads"))
    p.add_argument("--num-prompts", type=int, default=DEFAULT_NUM_PROMPTS)
    p.add_argument("--perf-output-len", type=int, default=DEFAULT_PERF_OUTPUT_LEN)
    p.add_argument("--acceptance-max-tokens", type=int, default=DEFAULT_ACCEPTANCE_MAX_TOKENS)
    p.set_defaults(func=_cmd)
