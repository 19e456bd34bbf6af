"""The groups `make test`'s parallel workers take whole (tests/conftest.py): a shared fixture split over two
workers would run twice (two compose stacks on one engine, two sweeps of every method)."""

from __future__ import annotations

import pytest

from tests.conftest import files_sharing_a_session_sweep, files_starting_servers, queue_order, worker_group

pytestmark = pytest.mark.unit


def test_the_compose_chain_and_the_files_of_the_shared_sweep_are_one_group_each():
    shared = files_sharing_a_session_sweep()
    # the report test reads the sweep through a fixture of its own (written), the sweep test directly
    assert {"tests/integration/test_report.py", "tests/integration/test_sweep.py"} <= shared
    assert "tests/integration/test_sessions.py" not in shared  # starts its own servers
    assert worker_group("tests/compose/test_run.py::test_x", shared) == "compose"
    assert worker_group("tests/compose/gpu_form/test_make.py::test_y[a]", shared) == "compose"
    assert worker_group("tests/integration/test_report.py::test_z", shared) == "integration-shared"
    assert worker_group("tests/integration/test_sweep.py::test_w", shared) == "integration-shared"
    assert worker_group("tests/cli/test_bad_input.py::test_v[p::q]", shared) == "tests/cli/test_bad_input.py"


def test_groups_that_start_servers_go_first_so_the_last_ones_taken_are_short():
    heavy = files_starting_servers()
    assert {"tests/integration/test_sessions.py", "tests/slurm/test_sweep.py", "tests/compose/test_run.py"} <= heavy
    assert "tests/results/test_summary.py" not in heavy and "tests/test_worker_groups.py" not in heavy
    groups = {
        "tests/results/test_summary.py": 40,
        "integration-shared": 30,
        "tests/slurm/test_sweep.py": 3,
        "compose": 140,
        "tests/integration/test_sessions.py": 5,
        "tests/host/test_engine.py": 60,
    }
    assert queue_order(groups, heavy) == [
        "compose",
        "integration-shared",
        "tests/integration/test_sessions.py",
        "tests/slurm/test_sweep.py",
        "tests/host/test_engine.py",
        "tests/results/test_summary.py",
    ]
