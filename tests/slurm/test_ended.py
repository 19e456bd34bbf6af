"""Tasks that Slurm itself ends, on the real single-node Slurm (tests/slurm/cluster.py): one whose time limit
runs out (state TIMEOUT) and one preempted by a job of a higher-tier partition (state PREEMPTED). `specstack
slurm gather` names each in the bundle with the task, the harness's own reason and the fix, and a resubmit would
run it again.

Each task is made to stall cheaply rather than to run a long measurement: the test holds the run folder's lock
(results/files.py folder_locked), which the harness takes to record the run in the manifest before it starts a
server, so the task waits in flock with no vLLM started until Slurm ends it. What ends it is Slurm's own time
limit and preemption; what is checked is what the harness and gather make of that."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

SPECSTACK = Path(sys.executable).with_name("specstack")


def specstack(cluster, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(SPECSTACK), "slurm", *args], capture_output=True, text=True, env=cluster.env, timeout=300
    )


class RunFolderLock:
    """Hold the run folder's flock, as a second writer of the manifest would."""

    def __init__(self, run_dir: Path):
        run_dir.mkdir(parents=True, exist_ok=True)
        self.fd = os.open(run_dir, os.O_RDONLY)
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def release(self) -> None:
        os.close(self.fd)


def submit_stalled(cluster, results: Path, run_id: str, models_dir: Path, *options: str) -> tuple[str, RunFolderLock]:
    lock = RunFolderLock(results / run_id)
    proc = specstack(
        cluster,
        "submit",
        "--methods",
        "baseline",
        "--run-id",
        run_id,
        "--results",
        str(results),
        "--run-args",
        f"--model-set tiny --platform cpu-native --models-dir {models_dir}",
        *options,
    )
    assert proc.returncode == 0, proc.stderr
    job = json.loads(proc.stdout)["arrays"][0]["job_id"]
    task = f"{job}_0"
    deadline = time.monotonic() + 120  # running, and its harness has reached the lock (its start record is there)
    while not (
        cluster.run("squeue", "-h", "-r", "-j", job, "-o", "%T").stdout.strip() == "RUNNING"
        and list((results / run_id / "host-provenance").glob("baseline.json"))
    ):
        assert time.monotonic() < deadline, f"{task} never ran: {cluster.queued()}\n{cluster.logs()}"
        time.sleep(0.5)
    return task, lock


def assert_named(cluster, results: Path, run_id: str, task: str, status: str, state: str) -> dict:
    """gather names the task's end in the bundle (status, Slurm state, the task, the resubmit) and no process of
    the task is left; the manifest, for what a test checks further."""
    proc = specstack(cluster, "gather", str(results / run_id), "--no-report")
    out, manifest = json.loads(proc.stdout), json.loads((results / run_id / "manifest.json").read_text())
    assert proc.returncode == 1 and out["missing"] == {"baseline": status}, out
    entry = manifest["methods"]["baseline"]
    assert entry["status"] == status and entry["slurm_state"] == state, entry
    assert f"task {task}" in entry["error"] and f"specstack slurm submit --run-id {run_id}" in entry["error"], entry
    assert not no_task_process_left(run_id)
    return manifest


def no_task_process_left(run_id: str) -> list[str]:
    ps = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout.splitlines()
    return [line for line in ps if f"--run-id {run_id}" in line or f"/{run_id}/.slurm/" in line]


def test_a_task_past_its_time_limit_is_named_timed_out(slurm_cluster, models_dir, tmp_path):
    results, run_id = tmp_path / "shared", "slurm-timeout"
    task, lock = submit_stalled(slurm_cluster, results, run_id, models_dir, "--time", "1")
    try:
        slurm_cluster.wait_idle(240)  # Slurm checks limits every 30 s; SIGTERM, then KillWait
    finally:
        lock.release()
    manifest = assert_named(slurm_cluster, results, run_id, task, "timed out", "TIMEOUT")
    assert manifest["slurm"]["methods"]["baseline"]["end"]["time_limit"] == "00:01:00"


def test_a_preempted_task_is_named_preempted(slurm_cluster, models_dir, tmp_path):
    results, run_id = tmp_path / "shared", "slurm-preempt"
    cpus = str(os.cpu_count() or 1)
    task, lock = submit_stalled(slurm_cluster, results, run_id, models_dir, "--cpus-per-task", cpus)
    try:
        urgent = slurm_cluster.run(
            "sbatch", "--parsable", "-p", "urgent", "-c", cpus, "-o", str(tmp_path / "urgent.out"), "--wrap", "sleep 1"
        )
        assert urgent.returncode == 0, urgent.stderr
        slurm_cluster.wait_idle(180)
    finally:
        lock.release()
    assert_named(slurm_cluster, results, run_id, task, "preempted", "PREEMPTED")
