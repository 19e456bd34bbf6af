"""collector/specstack/host/snapshot.py: the script that finds, inside the server container, what it loaded."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from specstack.host import snapshot

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]


def test_snapshot_script_reports_hub_snapshots_and_local_folders(tmp_path):
    hf = tmp_path / "hf"
    commit = tomllib.loads((REPO / "services" / "methods.toml").read_text())["model_sets"]["default"]["revisions"][
        "target"
    ]  # Qwen3-8B is pinned: the server asks for that commit
    snap = hf / "hub" / "models--Qwen--Qwen3-8B" / "snapshots" / commit
    snap.mkdir(parents=True)
    (snap / "config.json").write_text('{"a": 1}')
    (hf / "hub" / "models--Qwen--Qwen3-8B" / "refs").mkdir()
    (hf / "hub" / "models--Qwen--Qwen3-8B" / "refs" / "main").write_text(commit + "\n")
    env = {"HF_HOME": str(hf), "PATH": "/usr/bin:/bin", "SPECSTACK_MODEL_SET": "default"}
    out = subprocess.run(
        [sys.executable, "-c", snapshot.SNAPSHOT_SCRIPT, str(REPO / "services"), "draft_model"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout.strip().splitlines()[-1])
    target, draft = doc["models"]
    assert target == {
        "role": "target",
        "id": "Qwen/Qwen3-8B",
        "revision_requested": commit,
        "kind": "hub",
        "snapshot": commit,
        "files": ["config.json"],
        "config_sha256": hashlib.sha256(b'{"a": 1}').hexdigest(),
    }
    assert draft["id"] == "Qwen/Qwen3-0.6B" and draft["snapshot"] is None and "not in the" in draft["error"]
    assert doc["plan"]["method"] == "draft_model" and "--speculative-config" in doc["plan"]["argv"]
