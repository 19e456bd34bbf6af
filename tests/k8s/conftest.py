"""The chart rendered by the real helm (from the venv's pinned wheel, tests/k8s/tools.py), once per session and
set of values."""

from __future__ import annotations

import functools
import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from specstack.k8s.chart import CHART_DIR
from tests.k8s.tools import tools

RUN_ID = "k8s-run-1"
RELEASE = "bench"
NAMESPACE = "specstack"


@functools.cache
def _helm_home() -> dict[str, str]:
    """helm's cache, config and data folders: empty ones of its own, never the user's repositories or plugins."""
    home = Path(os.environ.get("TMPDIR", "/tmp")) / f"specstack-helm-home-{os.getpid()}"
    env = {f"HELM_{kind}_HOME": str(home / kind.lower()) for kind in ("CACHE", "CONFIG", "DATA")}
    return {**os.environ, **env}


def helm(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(tools()["helm"]), *args], capture_output=True, text=True, timeout=120, env=_helm_home())
    if check:
        assert proc.returncode == 0, f"helm {' '.join(args)} failed:\n{proc.stderr}"
    return proc


def sets(values: dict) -> list[str]:
    """--set-json for each value (lists and booleans keep their types)."""
    return [arg for key, value in values.items() for arg in ("--set-json", f"{key}={json.dumps(value)}")]


@functools.cache
def _render(values_json: str, kube_version: str) -> tuple[dict, ...]:
    values = {"runId": RUN_ID, **json.loads(values_json)}
    out = helm(
        "template", RELEASE, str(CHART_DIR), "--namespace", NAMESPACE, "--kube-version", kube_version, *sets(values)
    ).stdout
    return tuple(d for d in yaml.safe_load_all(out) if d)


def render(values: dict | None = None, kube_version: str = "1.35.0") -> list[dict]:
    """The chart's objects for these values (runId set), rendered once per session and values."""
    return [dict(d) for d in _render(json.dumps(values or {}, sort_keys=True), kube_version)]


def of_kind(objects: list[dict], kind: str) -> list[dict]:
    return [o for o in objects if o["kind"] == kind]


@pytest.fixture(scope="session")
def rendered() -> list[dict]:
    return render()
