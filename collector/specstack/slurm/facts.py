"""Slurm's own facts about each task: what the task's environment says when it starts (job and array ids, node,
the GPUs Slurm gave it) and how it ended (state, elapsed time, time limit), from sacct where accounting is
kept, else from slurmctld's memory (scontrol), each record saying which. The parsers are pure."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Mapping

TIMEOUT = 60
SACCT_FIELDS = (
    "JobID",
    "JobIDRaw",
    "State",
    "ExitCode",
    "Elapsed",
    "Timelimit",
    "NodeList",
    "Start",
    "End",
    "AllocTRES",
)
# A Slurm state (its first word: sacct writes "CANCELLED by 0") -> the method status the bundle names.
STATUS = {
    "CANCELLED": "cancelled",
    "PREEMPTED": "preempted",
    "TIMEOUT": "timed out",
    "FAILED": "failed",
    "NODE_FAIL": "node failed",
    "OUT_OF_MEMORY": "out of memory",
    "BOOT_FAIL": "boot failed",
    "DEADLINE": "deadline passed",
    "PENDING": "pending",
    "RUNNING": "running",
    "REQUEUED": "pending",
    "SUSPENDED": "suspended",
    "COMPLETING": "running",
    "COMPLETED": "completed",
}
ENDED = {
    "CANCELLED",
    "PREEMPTED",
    "TIMEOUT",
    "FAILED",
    "NODE_FAIL",
    "OUT_OF_MEMORY",
    "BOOT_FAIL",
    "DEADLINE",
    "COMPLETED",
}


def task_ids(expr: str) -> list[int]:
    """An array's task ids as Slurm writes them: "3", "0-2", "1,3-4", "0-7%2" (throttle), "[1-2]"."""
    expr = expr.strip().strip("[]").split("%", 1)[0]
    out: list[int] = []
    for part in filter(None, expr.split(",")):
        lo, _, rest = part.partition("-")
        hi, _, step = rest.partition(":")
        out += list(range(int(lo), int(hi or lo) + 1, int(step or 1)))
    return out


def state_word(state: str) -> str:
    return (state or "").split()[0].rstrip("+") if state else ""


def status_of(state: str) -> str:
    word = state_word(state)
    return STATUS.get(word, word.lower() or "unknown")


def parse_scontrol(text: str) -> list[dict]:
    """`scontrol show job -d -o` (one line per job record; a pending remainder of an array is one record with a
    range of task ids) -> one dict per array task."""
    out = []
    for line in text.splitlines():
        fields = dict(tok.split("=", 1) for tok in line.split() if "=" in tok)
        if "JobId" not in fields or "ArrayJobId" not in fields:
            continue
        idx = re.search(r"IDX:([\d,\-]+)", line)
        for task in task_ids(fields.get("ArrayTaskId", "")):
            out.append(
                {
                    "job_id": fields["JobId"],
                    "array_job_id": fields["ArrayJobId"],
                    "array_task_id": task,
                    "state": fields.get("JobState"),
                    "reason": fields.get("Reason"),
                    "exit_code": fields.get("ExitCode"),
                    "node": _none(fields.get("BatchHost") or fields.get("NodeList")),
                    "start": _none(fields.get("StartTime")),
                    "end": _none(fields.get("EndTime")),
                    "elapsed": fields.get("RunTime"),
                    "time_limit": fields.get("TimeLimit"),
                    "gres_index": idx.group(1) if idx else None,
                }
            )
    return out


def parse_sacct(text: str) -> list[dict]:
    """`sacct -X -P -n --format=<SACCT_FIELDS>` -> one dict per array task ("5_[1-2]": the tasks still pending)."""
    out = []
    for line in text.splitlines():
        row = dict(zip(SACCT_FIELDS, line.split("|")))
        if len(row) != len(SACCT_FIELDS) or "_" not in row["JobID"]:
            continue
        array_job, _, tasks = row["JobID"].partition("_")
        gres = re.search(r"gres/gpu=(\d+)", row["AllocTRES"])
        for task in task_ids(tasks):
            out.append(
                {
                    "job_id": row["JobIDRaw"],
                    "array_job_id": array_job,
                    "array_task_id": task,
                    "state": row["State"],
                    "reason": None,
                    "exit_code": row["ExitCode"],
                    "node": _none(row["NodeList"]),
                    "start": _none(row["Start"]),
                    "end": _none(row["End"]),
                    "elapsed": row["Elapsed"],
                    "time_limit": row["Timelimit"],
                    "gpus_allocated": int(gres.group(1)) if gres else None,
                }
            )
    return out


def _none(value: str | None) -> str | None:
    return None if value in (None, "", "None", "Unknown", "(null)", "None assigned") else value


def _run(argv: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT)


def query(array_job_ids: list[str]) -> tuple[str, dict[tuple[str, int], dict]]:
    """(source, (array job id, task id) -> record) for the given arrays: sacct where accounting is kept; scontrol
    where it is not, and for a task sacct does not list yet (slurmdbd lags). slurmctld forgets a job MinJobAge
    seconds after it ended: then the task's own start record is all there is."""
    records: dict[tuple[str, int], dict] = {}
    sources = []
    sacct = shutil.which("sacct")
    if sacct:
        proc = _run([sacct, "-X", "-P", "-n", "-j", ",".join(array_job_ids), f"--format={','.join(SACCT_FIELDS)}"])
        if proc.returncode == 0:
            records = {(r["array_job_id"], r["array_task_id"]): r for r in parse_sacct(proc.stdout)}
            sources.append("sacct")
    scontrol = shutil.which("scontrol")
    if scontrol:
        found = 0
        for job in array_job_ids:  # one call per array: a purged one fails alone
            proc = _run([scontrol, "show", "job", "-d", "-o", job])
            for r in parse_scontrol(proc.stdout) if proc.returncode == 0 else []:
                if (r["array_job_id"], r["array_task_id"]) not in records:
                    records[(r["array_job_id"], r["array_task_id"])] = r
                    found += 1
        if found or not sources:
            sources.append("scontrol" if sources else "scontrol (no accounting: sacct is disabled or failed)")
    return " + ".join(sources) or "none (no sacct or scontrol on PATH)", records


def active(array_job_ids: list[str]) -> list[str]:
    """The tasks of these arrays still pending or running (squeue), as `<array>_<task>`."""
    squeue = shutil.which("squeue")
    if not squeue or not array_job_ids:
        return []
    proc = _run([squeue, "-h", "-r", "-j", ",".join(array_job_ids), "-o", "%i %T"])
    return [line.split()[0] for line in proc.stdout.splitlines() if line.strip()] if proc.returncode == 0 else []


def task_environment(env: Mapping[str, str] | None = None) -> dict:
    """What Slurm told the task through its environment (sbatch's OUTPUT ENVIRONMENT VARIABLES)."""
    env = os.environ if env is None else env
    keys = {
        "job_id": "SLURM_JOB_ID",
        "array_job_id": "SLURM_ARRAY_JOB_ID",
        "array_task_id": "SLURM_ARRAY_TASK_ID",
        "node": "SLURMD_NODENAME",
        "cluster": "SLURM_CLUSTER_NAME",
        "partition": "SLURM_JOB_PARTITION",
        "cpus_on_node": "SLURM_CPUS_ON_NODE",
        "job_gpus": "SLURM_JOB_GPUS",
        "cuda_visible_devices": "CUDA_VISIBLE_DEVICES",
        "restart_count": "SLURM_RESTART_COUNT",
    }
    return {k: env.get(v) for k, v in keys.items()}


def own_job(job_id: str) -> dict | None:
    """The running task's own record in slurmctld (time limit, start, the GRES index Slurm gave it)."""
    scontrol = shutil.which("scontrol")
    if not scontrol or not job_id:
        return None
    try:
        proc = _run([scontrol, "show", "job", "-d", "-o", job_id])
    except subprocess.TimeoutExpired:
        return None
    found = parse_scontrol(proc.stdout) if proc.returncode == 0 else []
    return found[0] if found else None
