"""`make` alone (and `make help`) lists the entry points from the Makefiles' `## make` lines, builds nothing, and
every target it names is a real one: a documented target that was renamed or removed fails here."""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from tests.support import REPO

pytestmark = pytest.mark.config

MAKEFILES = ("Makefile", "services/compose.mk", "images/images.mk")
# What a user of the product looks for first.
ENTRY_POINTS = {"demo", "test", "run", "sweep", "down", "images", "lock", "reproduce", "compare", "status", "logs"}


def make(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    return subprocess.run(
        ["make", "-s", "--no-print-directory", "-C", str(REPO), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


def defined_targets() -> set[str]:
    names: set[str] = set()
    for rel in MAKEFILES:
        for line in (REPO / rel).read_text().splitlines():
            m = re.match(r"^([A-Za-z0-9_.%/ -]+?)\s*:(?![=:])", line)
            if m and not line.startswith(("\t", "#")):
                names.update(m.group(1).split())
    return names


def test_make_alone_lists_the_entry_points_and_builds_nothing():
    venv_before = (REPO / ".venv" / ".ready").stat().st_mtime if (REPO / ".venv" / ".ready").exists() else None
    bare, help_ = make(), make("help")
    assert bare.returncode == 0 and help_.returncode == 0, bare.stderr + help_.stderr
    assert bare.stdout == help_.stdout and bare.stderr == ""
    after = (REPO / ".venv" / ".ready").stat().st_mtime if (REPO / ".venv" / ".ready").exists() else None
    assert after == venv_before
    listed = {line.split()[1].rstrip(":") for line in help_.stdout.splitlines() if line.startswith("make ")}
    assert listed >= ENTRY_POINTS, ENTRY_POINTS - listed
    # one heading per Makefile, in the order make reads them
    assert [line for line in help_.stdout.splitlines() if line.startswith("--- ")] == [
        "--- the venv: demo, tests, reports (Makefile)",
        "--- the compose stack, PLATFORM=gpu (default) or cpu (services/compose.mk)",
        "--- images built on this machine for PLATFORM=cpu (images/images.mk)",
    ]


def test_every_target_the_list_names_exists():
    lines = make("help").stdout.splitlines()
    listed = {line.split()[1].rstrip(":") for line in lines if line.startswith("make ")}
    also = {w for line in lines for w in re.findall(r"`make (\w[\w-]*)`", line)}
    missing = (listed | also) - defined_targets()
    assert not missing, f"`make help` names targets no Makefile defines: {sorted(missing)}"
