"""The single-node Slurm the tests in this folder submit to (tests/slurm/cluster.py), started once per module
that asks for it and stopped, daemons by pid, even when a test fails."""

from __future__ import annotations

import pytest

from tests.slurm.cluster import Cluster


@pytest.fixture(scope="module")
def slurm_cluster(tmp_path_factory):
    cluster = Cluster(tmp_path_factory.mktemp("slurm"))
    try:
        yield cluster.start()
    finally:
        cluster.stop()
