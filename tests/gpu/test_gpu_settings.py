"""tests/gpu's settings, checked without a GPU: which tests a run collects for each model set and phase, and a bad
SPECSTACK_GPU_* value refused at collection with the fix (docs/errors.md). Runs in `make test` (marker unit)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]


def collect(**env: str) -> subprocess.CompletedProcess:
    """`pytest --collect-only` of tests/gpu's GPU tests with these SPECSTACK_GPU_* settings (nothing runs)."""
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SPECSTACK_GPU_", "PYTEST_")) and k != "PYTEST_XDIST_WORKER"
    }
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-m",
            "gpu",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
            "tests/gpu",
        ],
        cwd=REPO,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=300,
    )


def collected_files(result: subprocess.CompletedProcess) -> set[str]:
    assert result.returncode == 0, result.stdout + result.stderr
    return {line.split("::")[0].rsplit("/", 1)[-1] for line in result.stdout.splitlines() if "::" in line}


def test_each_model_set_collects_the_tests_of_what_its_run_does():
    tiny = collected_files(collect())
    assert tiny == {"test_gpu_sweep.py", "test_gpu_lossless.py", "test_gpu_cached.py"}
    trained = collected_files(collect(SPECSTACK_GPU_MODEL_SET="smollm2"))
    assert trained == {"test_gpu_sweep.py", "test_gpu_trained.py"}


def test_bad_settings_are_refused_together_with_their_fixes():
    result = collect(SPECSTACK_GPU_MODEL_SET="default", SPECSTACK_GPU_REPEATS="three", SPECSTACK_GPU_CACHED="yes")
    out = result.stdout + result.stderr
    assert result.returncode == 4, out  # pytest's usage error: nothing collected, nothing run
    assert "SPECSTACK_GPU_MODEL_SET='default': tests/gpu runs tiny or smollm2" in out
    assert "SPECSTACK_GPU_REPEATS='three': give a whole number (0 or more)" in out
    assert "SPECSTACK_GPU_CACHED='yes': give first, all or none" in out
    assert "Traceback" not in out
