"""slurm/facts.py's parsers: task id ranges, `scontrol show job -d -o` and `sacct -P` lines as Slurm 22.05
writes them, and Slurm's states as the bundle's method status."""

from __future__ import annotations

import pytest

from specstack.slurm.facts import parse_sacct, parse_scontrol, status_of, task_environment, task_ids

pytestmark = pytest.mark.unit

# Slurm 22.05.8 here: array 1, task 0 cancelled (its own job id 3), task 2 running, a pending remainder of array 2
SCONTROL = (
    "JobId=3 ArrayJobId=1 ArrayTaskId=0 ArrayTaskThrottle=1 JobName=proto JobState=CANCELLED Reason=None "
    "ExitCode=143:0 RunTime=00:00:05 TimeLimit=00:05:00 StartTime=2026-12-02T09:51:46 EndTime=2026-12-02T09:51:51 "
    "NodeList=vm BatchHost=vm JOB_GRES=(null) Nodes=vm GRES=\n"
    "JobId=1 ArrayJobId=1 ArrayTaskId=2 JobState=RUNNING Reason=None ExitCode=0:0 RunTime=00:00:08 "
    "TimeLimit=00:05:00 StartTime=2026-12-02T09:51:51 EndTime=2026-12-02T09:56:51 NodeList=vm BatchHost=vm "
    "JOB_GRES=gpu:1 Nodes=vm CPU_IDs=0 Mem=0 GRES=gpu:1(IDX:3)\n"
    "JobId=2 ArrayJobId=2 ArrayTaskId=0-1%1 JobState=PENDING Reason=Dependency ExitCode=0:0 RunTime=00:00:00 "
    "TimeLimit=00:05:00 StartTime=Unknown EndTime=Unknown NodeList= \n"
    "JobId=9 JobName=plain JobState=COMPLETED\n"
)


def test_task_ids_read_every_form_slurm_writes():
    assert task_ids("3") == [3]
    assert task_ids("0-2") == [0, 1, 2]
    assert task_ids("1,3-4") == [1, 3, 4]
    assert task_ids("0-7%2") == [0, 1, 2, 3, 4, 5, 6, 7]
    assert task_ids("[1-2]") == [1, 2]
    assert task_ids("0-6:3") == [0, 3, 6]


def test_scontrol_records_one_per_task():
    records = {(r["array_job_id"], r["array_task_id"]): r for r in parse_scontrol(SCONTROL)}
    assert sorted(records) == [("1", 0), ("1", 2), ("2", 0), ("2", 1)]  # the job that is no array is left out
    cancelled = records[("1", 0)]
    assert cancelled == {
        "job_id": "3",
        "array_job_id": "1",
        "array_task_id": 0,
        "state": "CANCELLED",
        "reason": "None",
        "exit_code": "143:0",
        "node": "vm",
        "start": "2026-12-02T09:51:46",
        "end": "2026-12-02T09:51:51",
        "elapsed": "00:00:05",
        "time_limit": "00:05:00",
        "gres_index": None,
    }
    assert records[("1", 2)]["gres_index"] == "3"
    assert records[("2", 1)]["state"] == "PENDING" and records[("2", 1)]["node"] is None
    assert records[("2", 1)]["start"] is None


def test_sacct_rows_one_per_task():
    text = (
        "7_0|8|COMPLETED|0:0|00:01:02|02:00:00|gpu01|2026-12-02T10:00:00|2026-12-02T10:01:02|"
        "billing=1,cpu=1,gres/gpu=1,node=1\n"
        "7_1|9|CANCELLED by 0|0:15|00:00:30|02:00:00|gpu02|2026-12-02T10:00:00|2026-12-02T10:00:30|cpu=1\n"
        "7_[2-3%1]|7|PENDING|0:0|00:00:00|02:00:00|None assigned|Unknown|Unknown|\n"
    )
    rows = {r["array_task_id"]: r for r in parse_sacct(text)}
    assert sorted(rows) == [0, 1, 2, 3]
    assert rows[0]["job_id"] == "8" and rows[0]["gpus_allocated"] == 1 and rows[0]["node"] == "gpu01"
    assert rows[1]["state"] == "CANCELLED by 0" and rows[1]["gpus_allocated"] is None
    assert rows[3]["node"] is None and rows[3]["start"] is None


@pytest.mark.parametrize(
    "state,status",
    [
        ("CANCELLED by 0", "cancelled"),
        ("PREEMPTED", "preempted"),
        ("TIMEOUT", "timed out"),
        ("FAILED", "failed"),
        ("NODE_FAIL", "node failed"),
        ("OUT_OF_MEMORY", "out of memory"),
        ("COMPLETED", "completed"),
        ("RUNNING", "running"),
        ("PENDING", "pending"),
        ("", "unknown"),
        ("SOMETHING_NEW", "something_new"),
    ],
)
def test_slurm_states_become_method_statuses(state, status):
    assert status_of(state) == status


def test_the_task_environment_as_sbatch_sets_it():
    env = {
        "SLURM_JOB_ID": "12",
        "SLURM_ARRAY_JOB_ID": "10",
        "SLURM_ARRAY_TASK_ID": "2",
        "SLURMD_NODENAME": "gpu01",
        "SLURM_JOB_GPUS": "3",
        "CUDA_VISIBLE_DEVICES": "0",
    }
    got = task_environment(env)
    assert (got["job_id"], got["array_job_id"], got["array_task_id"], got["node"]) == ("12", "10", "2", "gpu01")
    assert (got["job_gpus"], got["cuda_visible_devices"], got["partition"]) == ("3", "0", None)
