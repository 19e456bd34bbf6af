"""slurm/gather.py's pure parts: which task is each method's latest attempt, and the status a method without a
good result gets from Slurm's record and the harness's summary."""

from __future__ import annotations

import pytest

from specstack.slurm.gather import latest_attempts, method_status

pytestmark = pytest.mark.unit

SUBMISSIONS = [
    {
        "submission": 1,
        "arrays": [
            {"name": "baselines", "job_id": "10", "methods": ["baseline"]},
            {"name": "methods", "job_id": "11", "methods": ["ngram", "suffix"]},
        ],
    },
    {"submission": 2, "arrays": [{"name": "methods", "job_id": "15", "methods": ["ngram"]}]},
]


def test_the_latest_submission_of_a_method_is_its_attempt():
    got = latest_attempts(SUBMISSIONS)
    assert got["baseline"] == {"array_job_id": "10", "array_task_id": 0, "array": "baselines", "submission": 1}
    assert got["suffix"]["array_job_id"] == "11" and got["suffix"]["array_task_id"] == 1
    assert got["ngram"] == {"array_job_id": "15", "array_task_id": 0, "array": "methods", "submission": 2}


def _record(state: str) -> dict:
    return {
        "array_job_id": "11",
        "array_task_id": 0,
        "state": state,
        "node": "gpu01",
        "elapsed": "00:03:10",
        "time_limit": "02:00:00",
        "exit_code": "0:15",
    }


@pytest.mark.parametrize(
    "state,status",
    [
        ("CANCELLED by 0", "cancelled"),
        ("TIMEOUT", "timed out"),
        ("PREEMPTED", "preempted"),
        ("FAILED", "failed"),
        ("NODE_FAIL", "node failed"),
        ("COMPLETED", "failed"),
    ],
)
def test_an_ended_task_is_named_with_its_task_the_harness_reason_and_the_fix(state, status):
    got, error = method_status(
        _record(state), {"error": "interrupted (SIGTERM); rerun the same command"}, "r1", ".slurm/11_0.out"
    )
    assert got == status
    assert error.startswith(
        f"Slurm: {state} (task 11_0 on gpu01, elapsed 00:03:10, limit 02:00:00, exit 0:15); "
        "the harness said: interrupted (SIGTERM)"
    )
    assert "; the task's log: .slurm/11_0.out; " in error
    assert error.endswith("`specstack slurm submit --run-id r1` runs it again")


def test_a_task_still_queued_says_to_gather_again():
    assert method_status(_record("PENDING"), None, "r1") == (
        "pending",
        "Slurm: PENDING; gather again when it has ended",
    )
    assert method_status(_record("RUNNING"), None, "r1")[0] == "running"


def test_a_task_slurm_no_longer_knows_is_unknown_not_guessed():
    status, error = method_status(None, None, "r1")
    assert status == "unknown" and "no Slurm record" in error
