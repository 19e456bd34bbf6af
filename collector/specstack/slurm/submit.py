"""`specstack slurm submit`: the methods of a run that have no good result yet, as job arrays (baselines first,
then the methods with `--dependency=afterany` on them), each task the native `specstack run` of one method
writing into the one run folder on a shared path. Every check comes before the first sbatch.

A submission's own files (plan, batch scripts, Slurm's task logs, the job ids) go to the run folder's `.slurm/`:
a dot folder, which the reader, pack and SHA256SUMS leave out (they are the scheduler's, not the measurements')."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specstack.errors import UserError
from specstack.results import layout, run_lock
from specstack.results.files import atomic_write_json, atomic_write_text, check_writable, folder_locked
from specstack.results.reader import good_result
from specstack.slurm import facts, script

SLURM_DIR = layout.SLURM_DIR
# Options each task sets itself (its method, the run, the shared folder, a free port); --force would rerun a
# good result, which a resubmit never does.
MANAGED = ("--method", "--run-id", "--results", "--port", "--force", "--url", "--runtime")


def slurm_dir(run_dir: Path) -> Path:
    return Path(run_dir) / SLURM_DIR


def read_submissions(run_dir: Path) -> list[dict]:
    path = Path(run_dir) / layout.SLURM_SUBMISSIONS
    return json.loads(path.read_text()) if path.exists() else []


def array_job_ids(submissions: list[dict]) -> list[str]:
    return [a["job_id"] for s in submissions for a in s["arrays"]]


@dataclass
class Submission:
    run_dir: Path
    arrays: list[dict] = field(default_factory=list)  # name, job_id, methods, script
    done: list[str] = field(default_factory=list)  # good results already in the run: not submitted


def check_run_args(run_args: list[str]) -> None:
    managed = sorted({a.split("=", 1)[0] for a in run_args if a.split("=", 1)[0] in MANAGED})
    if managed:
        raise UserError(
            f"--run-args sets {', '.join(managed)}, which each Slurm task sets itself (its method, the "
            "run id and results folder of the submission, a free port); drop them from --run-args"
        )


def sbatch_binary() -> str:
    exe = shutil.which("sbatch")
    if not exe:
        raise UserError(
            "sbatch not found: submit from a Slurm login node (Debian: apt-get install slurm-client, "
            "with the cluster's slurm.conf and munge key), or put sbatch on PATH"
        )
    return exe


def check_specstack(exe: str) -> None:
    if not Path(exe).is_file():
        raise UserError(
            f"{exe} does not exist: build the venv on the shared file system (make venv, or make venv "
            "PLATFORM=gpu for GPU nodes) or pass --specstack /shared/path/.venv/bin/specstack"
        )


def check_queue(run_dir: Path, submissions: list[dict]) -> None:
    """A resubmit while earlier tasks still wait or run would start a method twice."""
    busy = facts.active(array_job_ids(submissions))
    if busy:
        raise UserError(
            f"run {run_dir.name} still has Slurm tasks queued or running ({', '.join(busy[:8])}); wait "
            f"for them (squeue) or cancel them (scancel), then submit again"
        )


def submit(
    run_dir: Path,
    methods: list[str],
    run_args: list[str],
    sbatch_opts: script.SbatchOptions,
    *,
    specstack: str,
    baseline_of: Callable[[str], str | None],
) -> Submission:
    """Submit what is missing of `methods` in run_dir (already validated by the caller). Returns what went."""
    run_dir = Path(run_dir).resolve()
    exe = sbatch_binary()
    check_specstack(specstack)
    check_writable(run_dir.parent)
    # no submit while another harness measures into the run; two submits of one run at once would both submit the
    # missing methods
    # (the submission's token: a task that starts before this returns joins it)
    token = run_lock.new_token()
    with run_lock.held(run_dir, token_=token), folder_locked(slurm_dir(run_dir)):
        return _submit(
            run_dir, exe, methods, run_args, sbatch_opts, specstack=specstack, baseline_of=baseline_of, token=token
        )


def _submit(
    run_dir: Path,
    exe: str,
    methods: list[str],
    run_args: list[str],
    sbatch_opts: script.SbatchOptions,
    *,
    specstack: str,
    baseline_of: Callable[[str], str | None],
    token: str,
) -> Submission:
    submissions = read_submissions(run_dir)
    check_queue(run_dir, submissions)
    result = Submission(run_dir)
    result.done = [m for m in methods if good_result(run_dir, m) is not None]
    missing = [m for m in methods if m not in result.done]
    if not missing:
        return result
    folder = slurm_dir(run_dir)
    n = len(submissions) + 1
    arrays = script.split_arrays(missing, baseline_of)
    plan = folder / f"submission-{n}.json"
    # lock_token: the tasks of this submission are the parts of one run, sharing its lock (results/run_lock.py)
    atomic_write_json(
        plan,
        {
            "run_id": run_dir.name,
            "results": str(run_dir.parent),
            "run_args": run_args,
            "arrays": dict(arrays),
            "lock_token": token,
        },
    )
    record: dict[str, Any] = {
        "submission": n,
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "plan": plan.name,
        "sbatch": vars(sbatch_opts),
        "arrays": [],
    }
    depends_on = None
    for name, ms in arrays:
        path = folder / f"submission-{n}-{name}.sbatch"
        atomic_write_text(
            path,
            script.render(
                sbatch_opts,
                run_id=run_dir.name,
                array=name,
                methods=ms,
                specstack=specstack,
                plan=str(plan),
                output=str(folder / "%A_%a.out"),
            ),
        )
        argv = [exe, "--parsable", *([f"--dependency=afterany:{depends_on}"] if depends_on else []), str(path)]
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=facts.TIMEOUT, cwd=run_dir)
        if proc.returncode != 0:
            _record(folder, submissions, record, result)  # what did go is recorded before the error
            raise UserError(
                f"`{shlex.join(argv)}` failed: {(proc.stderr or proc.stdout).strip()[:400]}; fix the "
                "sbatch options (--partition, --gres, --time, --sbatch-arg) for this cluster"
            )
        job_id = proc.stdout.strip().split(";", 1)[0]  # --parsable: "<id>[;<cluster>]"
        depends_on = depends_on or job_id
        entry = {"name": name, "job_id": job_id, "methods": ms, "script": path.name}
        record["arrays"].append(entry)
        result.arrays.append(entry)
        print(
            f"submitted {name}: job {job_id}, " + ", ".join(f"{job_id}_{i} {m}" for i, m in enumerate(ms)),
            file=sys.stderr,
        )
    _record(folder, submissions, record, result)
    return result


def _record(folder: Path, submissions: list[dict], record: dict, result: Submission) -> None:
    if record["arrays"]:
        atomic_write_json(folder.parent / layout.SLURM_SUBMISSIONS, [*submissions, record])  # folder: run/.slurm
