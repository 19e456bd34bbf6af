"""`make sweep SCHEDULER=slurm` (services/compose.mk): make's knobs become `specstack slurm submit`'s options; a
wrong SCHEDULER or a missing venv is refused naming the fix. (tests/slurm/test_sweep.py runs it for real.)"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]


def make(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "--no-print-directory", *args], cwd=REPO, capture_output=True, text=True, timeout=60)


def test_the_knobs_become_submit_options():
    proc = make(
        "-n",
        "sweep",
        "SCHEDULER=slurm",
        "PLATFORM=cpu",
        "MODEL_SET=tiny",
        "RUN_ID=r1",
        "K=2",
        "PREFIX_CACHING=1",
        "SWEEP_METHODS=baseline ngram",
        "SWEEP_MTP_METHODS=mtp-baseline mtp",
        "RUN_ARGS=--tasks code",
        "SLURM_ARGS=--partition debug",
    )
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.replace("\\\n", " ").split())
    assert (
        ".venv/bin/specstack slurm submit --run-id 'r1' --methods \"$(echo baseline ngram mtp-baseline mtp | "
        "tr ' ' ,)\"" in text
    )
    assert (
        "--run-args '--model-set tiny --platform cpu-native --k 2 --prefix-caching --tasks code' "
        "--partition debug" in text
    )
    assert "docker" not in text  # no compose step on this path


def test_another_scheduler_is_refused():
    proc = make("-n", "sweep", "SCHEDULER=pbs")
    assert proc.returncode != 0 and "SCHEDULER must be empty (compose) or slurm, not 'pbs'" in proc.stderr


def test_without_the_venv_the_fix_is_named(tmp_path):
    proc = make("sweep", "SCHEDULER=slurm", f"VENV={tmp_path / 'none'}")
    assert proc.returncode == 2 and "make venv PLATFORM=gpu" in proc.stdout
