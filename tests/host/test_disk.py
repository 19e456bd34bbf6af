"""collector/specstack/host/disk.py (`specstack.host check-disk`): before `make images` builds, the disk Docker keeps
its images on has the room the build needs, read from the real file system; otherwise one message with the fix.
On the real engine: tests/compose/test_images.py::test_a_build_without_room_is_refused_before_anything_is_built."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from specstack.host import disk

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]


def test_room_is_read_from_the_file_system_holding_the_folder(tmp_path):
    assert disk.free_bytes(str(tmp_path)) == pytest.approx(shutil.disk_usage(tmp_path).free, rel=0.01)
    # Docker's own folder is root's: a folder this user cannot read is measured at the nearest one it can
    assert disk.free_bytes(str(tmp_path / "docker" / "overlay2")) == pytest.approx(
        shutil.disk_usage(tmp_path).free, rel=0.01
    )


def test_enough_room_passes_and_too_little_names_the_folder_the_figures_and_the_fix():
    assert disk.problem("/var/lib/docker", 10, 10 * disk.GB, "make images PLATFORM=cpu") is None
    found = disk.problem("/var/lib/docker", 10, int(9.24 * disk.GB), "make images PLATFORM=cpu")
    assert found is not None
    assert found.startswith("make images PLATFORM=cpu needs about 10 GB free where Docker keeps its images")
    assert "(/var/lib/docker), and 9.2 GB are free there" in found
    assert "docker system prune -a" in found


def test_an_engine_on_another_host_is_not_measured_here():
    assert disk.docker_root("docker", {"DOCKER_HOST": "tcp://build-host:2376"}) is None
    assert disk.check("docker", 10**9, "make images", {"DOCKER_HOST": "ssh://me@build-host"}) is None


def _stand_in(tmp_path: Path, root: Path, rc: int = 0) -> Path:
    """A docker CLI that answers `docker info` with `root` as its data folder (or fails)."""
    docker = tmp_path / "docker"
    docker.write_text(f'#!/bin/sh\n[ "$1" = info ] || exit 64\necho "{root}"\nexit {rc}\n')
    docker.chmod(0o755)
    return docker


@pytest.mark.parametrize("need_gb,exit_code", [(0.001, 0), (10**9, 2)])
def test_the_script_make_runs_with_the_hosts_python(tmp_path, need_gb, exit_code):
    root = tmp_path / "data-root"
    root.mkdir()
    out = subprocess.run(
        [sys.executable, "-m", "specstack.host", "check-disk", "--docker", str(_stand_in(tmp_path, root))]
        + ["--need-gb", str(need_gb), "--purpose", "make images PLATFORM=cpu"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO / "collector")},
    )
    assert out.returncode == exit_code, out.stderr
    assert (
        f"host check: make images PLATFORM=cpu needs about 1e+09 GB free where Docker keeps its images ({root})"
        in out.stderr
    ) == (exit_code == 2)


def test_an_engine_that_does_not_answer_is_left_to_the_build(tmp_path):
    """make's own check ("no Docker engine answers") comes first; this check does not guess a folder."""
    assert disk.docker_root(str(_stand_in(tmp_path, tmp_path, rc=1)), {}) is None
