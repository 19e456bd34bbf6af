"""One array task, inside Slurm: which method it runs (its index in the submission's plan), what Slurm gave it
(recorded as the result's host record before the server starts, so the method's summary carries it), and a
free port for its server (tasks of several arrays may share a node)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

from specstack.errors import UserError
from specstack.host.gpu import nvidia_smi_host
from specstack.results import layout
from specstack.results.files import atomic_write_json
from specstack.slurm import facts


def read_plan(path: Path) -> dict:
    try:
        return json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise UserError(
            f"cannot read the submission plan {path} ({e}); is the run folder on a file system this "
            "node mounts at the same path? (submit with --results on the shared path)"
        ) from None


def method_of(plan: dict, array: str, env: Mapping[str, str] | None = None) -> str:
    env = os.environ if env is None else env
    index = env.get("SLURM_ARRAY_TASK_ID")
    if index is None:
        raise UserError(
            "SLURM_ARRAY_TASK_ID is not set: `specstack slurm task` runs inside a Slurm array task "
            "(sbatch runs it); to run a method by hand use `specstack run --method NAME`"
        )
    methods = (plan.get("arrays") or {}).get(array) or []
    if not 0 <= int(index) < len(methods):
        raise UserError(f"array {array!r} of this plan has {len(methods)} methods, no task {index}")
    return methods[int(index)]


def start_record(env: Mapping[str, str] | None = None) -> dict:
    """Slurm's facts at the task's start: its environment, its own job record (time limit, GRES index), and
    the GPUs nvidia-smi shows inside the allocation (none on a CPU node)."""
    here = facts.task_environment(env)
    own = facts.own_job(here["job_id"] or "")
    gpu = nvidia_smi_host()
    return {
        "source": "slurm task",
        "slurm": {
            **here,
            "time_limit": (own or {}).get("time_limit"),
            "start": (own or {}).get("start"),
            "gres_index": (own or {}).get("gres_index"),
            "facts_source": "environment + scontrol show job" if own else "environment",
        },
        "gpu": gpu,
        "cpu": {"source": "slurm task", "cores": os.cpu_count(), "allocated_cpus": here["cpus_on_node"]},
    }


def write_start_record(run_dir: Path, method: str, record: dict) -> Path:
    return atomic_write_json(Path(run_dir) / layout.host_record(method), record)
