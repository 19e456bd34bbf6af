"""slurm/task.py: the method of an array task, and the errors a task outside Slurm or a stale plan gets."""

from __future__ import annotations

import pytest

from specstack.errors import UserError
from specstack.server.runtime import free_port
from specstack.slurm.task import method_of, read_plan

pytestmark = pytest.mark.unit

PLAN = {"run_id": "r1", "arrays": {"baselines": ["baseline"], "methods": ["ngram", "suffix"]}}


def test_the_task_index_picks_the_method_of_its_array():
    assert method_of(PLAN, "methods", {"SLURM_ARRAY_TASK_ID": "1"}) == "suffix"
    assert method_of(PLAN, "baselines", {"SLURM_ARRAY_TASK_ID": "0"}) == "baseline"


def test_outside_an_array_task_the_error_names_specstack_run():
    with pytest.raises(UserError, match="SLURM_ARRAY_TASK_ID is not set.*specstack run --method"):
        method_of(PLAN, "methods", {})


def test_an_index_beyond_the_array_is_refused():
    with pytest.raises(UserError, match="array 'methods' of this plan has 2 methods, no task 2"):
        method_of(PLAN, "methods", {"SLURM_ARRAY_TASK_ID": "2"})


def test_an_unreadable_plan_names_the_shared_path(tmp_path):
    with pytest.raises(UserError, match="shared path"):
        read_plan(tmp_path / "missing.json")


def test_free_port_honours_the_port_range(monkeypatch):
    monkeypatch.setenv("SPECSTACK_PORT_RANGE", "24100-24110")
    assert 24100 <= free_port() <= 24110


def _stand_in(folder, name: str, output: str) -> None:
    path = folder / name
    path.write_text(f"#!/bin/sh\necho '{output}'\n")  # echo: a builtin, PATH holds only the stand-ins
    path.chmod(0o755)


def test_the_start_record_of_a_gpu_task(monkeypatch, tmp_path):
    """What a task on a GPU node records, with stand-ins for nvidia-smi (the one GPU its cgroup shows) and
    scontrol (its own job record, GRES index 3): Slurm's index and the UUID, side by side."""
    _stand_in(
        tmp_path,
        "nvidia-smi",
        "0, GPU-5f3c0d2e-1111-2222-3333-444455556666, NVIDIA H200, 580.65.06, 143771, 0, 00000000:9B:00.0",
    )
    _stand_in(
        tmp_path,
        "scontrol",
        "JobId=12 ArrayJobId=10 ArrayTaskId=2 JobState=RUNNING ExitCode=0:0 "
        "RunTime=00:00:01 TimeLimit=02:00:00 StartTime=2026-12-02T10:00:00 "
        "EndTime=2026-12-02T12:00:00 NodeList=gpu01 BatchHost=gpu01 JOB_GRES=gpu:1 "
        "Nodes=gpu01 CPU_IDs=0-7 Mem=0 GRES=gpu:1(IDX:3)",
    )
    monkeypatch.setenv("PATH", str(tmp_path))
    from specstack.slurm.task import start_record

    record = start_record(
        {
            "SLURM_JOB_ID": "12",
            "SLURM_ARRAY_JOB_ID": "10",
            "SLURM_ARRAY_TASK_ID": "2",
            "SLURMD_NODENAME": "gpu01",
            "SLURM_JOB_GPUS": "3",
            "CUDA_VISIBLE_DEVICES": "0",
        }
    )
    slurm = record["slurm"]
    assert (slurm["job_gpus"], slurm["gres_index"], slurm["cuda_visible_devices"]) == ("3", "3", "0")
    assert slurm["time_limit"] == "02:00:00" and slurm["facts_source"] == "environment + scontrol show job"
    [gpu] = record["gpu"]["gpus"]
    assert gpu["uuid"] == "GPU-5f3c0d2e-1111-2222-3333-444455556666" and gpu["name"] == "NVIDIA H200"


def test_the_start_record_of_a_cpu_task_outside_scontrol(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # neither nvidia-smi nor scontrol
    from specstack.slurm.task import start_record

    record = start_record({"SLURM_JOB_ID": "5"})
    assert record["gpu"] is None and record["slurm"]["facts_source"] == "environment"
