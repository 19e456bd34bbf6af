"""The test cluster's own guard: without the Slurm or munge binaries the Slurm tests fail naming the install,
never skip."""

from __future__ import annotations

import pytest

from tests.slurm import cluster

pytestmark = pytest.mark.unit


def test_missing_binaries_fail_naming_the_fix(monkeypatch):
    monkeypatch.setattr(cluster.shutil, "which", lambda name, path=None: None if name == "slurmd" else f"/bin/{name}")
    with pytest.raises(
        pytest.fail.Exception,
        match=r"not found: slurmd; install them with `apt-get install "
        r"slurmctld slurmd munge slurm-client`",
    ):
        cluster.require_binaries()
