"""collector/specstack/host/buildx.py (`specstack.host check-buildx`): the host pre-check before `docker compose build` refuses exactly the
buildx plugins Docker Compose 2.40.2+ refuses (older than 0.17), and lets everything else through."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from specstack.host import buildx

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
MODULE = REPO / "collector" / "specstack" / "host" / "buildx.py"


@pytest.mark.parametrize(
    "text,version",
    [
        ("github.com/docker/buildx v0.17.1 257815a6fb95c2d3c3a2ea5d6b3ec3e3f4a9c2a0\n", (0, 17, 1)),
        ("github.com/docker/buildx v0.29.1-desktop.1 34c0a3b2f1\n", (0, 29, 1)),
        ("github.com/docker/buildx 0.13.1+ds1-3 0.13.1+ds1-3\n", (0, 13, 1)),  # Debian's docker-buildx
        ("github.com/docker/buildx v0.16.2 f4e3e47\n", (0, 16, 2)),
        ("github.com/docker/buildx v1.0 abc\n", (1, 0, 0)),
        ("\n", None),
    ],
)
def test_version_is_read_from_what_buildx_prints(text, version):
    assert buildx.parse_version(text) == version


@pytest.mark.parametrize(
    "text",
    [
        "github.com/docker/buildx v0.17.0 e5ef6f7\n",
        "github.com/docker/buildx v0.29.1-desktop.1 34c0a3b2f1\n",
        "github.com/docker/buildx v1.2.3 abc\n",
    ],
)
def test_buildx_0_17_or_newer_passes(text):
    assert buildx.problem(text) is None


def test_no_buildx_passes_compose_builds_without_it():
    """`docker buildx version` failed (no plugin, as on the project's CI machines): Compose warns and builds
    with its own builder, so nothing is refused."""
    assert buildx.problem(None) is None


@pytest.mark.parametrize(
    "text,have",
    [
        ("github.com/docker/buildx v0.16.2 f4e3e47\n", "0.16.2"),
        ("github.com/docker/buildx 0.13.1+ds1-3 0.13.1+ds1-3\n", "0.13.1"),
        ("github.com/docker/buildx v0.11.2 9872040\n", "0.11.2"),
    ],
)
def test_old_buildx_is_refused_naming_every_way_out(text, have):
    msg = buildx.problem(text)
    assert msg is not None and f"docker buildx {have} is older than 0.17" in msg
    assert "compose build requires buildx 0.17 or later" in msg and "docker/compose#13295" in msg
    assert "docker-buildx-plugin" in msg and "DOCKER_BUILDKIT=0 make" in msg
    # what works without it
    assert "`make images PLATFORM=cpu` uses plain `docker build`" in msg


@pytest.mark.parametrize("value,refused", [("0", False), ("false", False), ("1", True), ("", True)])
def test_buildkit_off_uses_the_classic_builder_which_needs_no_buildx(value, refused):
    old = "github.com/docker/buildx v0.16.2 f4e3e47\n"
    assert (buildx.problem(old, {"DOCKER_BUILDKIT": value}) is not None) == refused


def test_output_without_a_version_is_refused_with_what_it_printed():
    msg = buildx.problem("buildx: something odd\n")
    assert msg is not None and "'buildx: something odd'" in msg and "names no version" in msg


def _stand_in(tmp_path: Path, stdout: str, rc: int) -> Path:
    docker = tmp_path / "docker"
    docker.write_text(f"#!/bin/sh\n[ \"$1 $2\" = 'buildx version' ] || exit 3\nprintf '%s' '{stdout}'\nexit {rc}\n")
    docker.chmod(0o755)
    return docker


@pytest.mark.parametrize(
    "stdout,rc,exit_code",
    [
        ("github.com/docker/buildx v0.16.2 f4e3e47\n", 0, 2),
        ("github.com/docker/buildx v0.17.1 257815a\n", 0, 0),
        ("", 1, 0),  # docker: unknown command: docker buildx
    ],
)
def test_the_script_make_runs_with_the_hosts_python(tmp_path, stdout, rc, exit_code):
    docker = _stand_in(tmp_path, stdout, rc)
    out = subprocess.run(
        [sys.executable, "-m", "specstack.host", "check-buildx", "--docker", str(docker)],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO / "collector")},
    )
    assert out.returncode == exit_code, out.stderr
    assert ("host check: docker buildx 0.16.2 is older than 0.17" in out.stderr) == (exit_code == 2)


def test_module_is_python_3_8_syntax():
    """make runs it with whatever python3 the host has (docs/gpu.md: 3.8 or newer)."""
    ast.parse(MODULE.read_text(), feature_version=(3, 8))
