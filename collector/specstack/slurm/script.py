"""What `specstack slurm submit` hands sbatch, as pure functions: the methods split into arrays (baselines
first) and the batch script of one array. Nothing here runs a command."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass, field

BASELINES, METHODS = "baselines", "methods"  # the arrays of one submission, in submission order


@dataclass
class SbatchOptions:
    """What Slurm gives each task. gres None: no generic resource (the CPU form); max_parallel: the array's
    `%N` throttle (None: as many at once as Slurm will start)."""

    partition: str | None = None
    time: str | None = None
    gres: str | None = "gpu:1"
    cpus_per_task: int | None = None
    mem: str | None = None
    account: str | None = None
    qos: str | None = None
    max_parallel: int | None = None
    extra: list[str] = field(default_factory=list)  # --sbatch-arg: anything else (a pyxis --container-image)


def split_arrays(methods: list[str], baseline_of: Callable[[str], str | None]) -> list[tuple[str, list[str]]]:
    """(array name, its methods): the plain-decode baselines first, then every method compared with one; an
    empty array is left out. The second array depends on the first (submit.py), so a method's baseline has run
    before it starts (turn 2 and --rates auto read the baseline's results)."""
    plain = [m for m in methods if baseline_of(m) is None]
    rest = [m for m in methods if baseline_of(m) is not None]
    return [(name, ms) for name, ms in ((BASELINES, plain), (METHODS, rest)) if ms]


def array_spec(count: int, max_parallel: int | None) -> str:
    return f"0-{count - 1}" + (f"%{max_parallel}" if max_parallel else "")


def directives(opts: SbatchOptions, *, job_name: str, count: int, output: str) -> list[str]:
    """The #SBATCH lines of one array (output: sbatch's pattern, %A the array's job id, %a the task's index)."""
    lines = [
        f"--job-name={job_name}",
        f"--array={array_spec(count, opts.max_parallel)}",
        f"--output={output}",
        "--open-mode=append",
        "--ntasks=1",
    ]
    for flag, value in (
        ("partition", opts.partition),
        ("time", opts.time),
        ("gres", opts.gres),
        ("cpus-per-task", opts.cpus_per_task),
        ("mem", opts.mem),
        ("account", opts.account),
        ("qos", opts.qos),
    ):
        if value not in (None, ""):
            lines.append(f"--{flag}={value}")
    return lines + list(opts.extra)


def render(
    opts: SbatchOptions, *, run_id: str, array: str, methods: list[str], specstack: str, plan: str, output: str
) -> str:
    """The batch script of one array: each task execs `specstack slurm task PLAN ARRAY`, which picks its method
    by SLURM_ARRAY_TASK_ID and runs it as `specstack run` does natively. exec: Slurm's signals (scancel, the
    time limit, preemption) reach the harness itself, which stops its server and keeps the method as failed."""
    head = [
        "#!/bin/bash",
        f"# specstack slurm: run {run_id}, array {array!r}, one task per method (index: method):",
        *[f"#   {i}: {m}" for i, m in enumerate(methods)],
        "# written by `specstack slurm submit`; the serve arguments come from services/methods.toml at run time",
    ]
    body = [
        f"#SBATCH {line}"
        for line in directives(opts, job_name=f"specstack-{run_id}-{array}", count=len(methods), output=output)
    ]
    cmd = " ".join(shlex.quote(p) for p in (specstack, "slurm", "task", plan, array))
    return "\n".join([*head, *body, f"exec {cmd}", ""])
