"""The chart's PodMonitor against the Prometheus Operator's CRD schema, as @kubernetes-models/prometheus-operator
4.4.4 generates it (kubernetes-validate knows only the built-in kinds). tests/k8s/podmonitor-check/ is installed
by `npm ci` from its committed package-lock.json on first use, as tests/grafana installs @grafana/schema."""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path

import pytest

from tests.k8s.conftest import of_kind
from tests.support import npm_installed

pytestmark = pytest.mark.config

CHECK_DIR = Path(__file__).resolve().parent / "podmonitor-check"


def check(objects: list[dict], tmp_path: Path) -> subprocess.CompletedProcess:
    path = tmp_path / "objects.json"
    path.write_text(json.dumps(objects))
    return subprocess.run(
        [npm_installed(CHECK_DIR), str(CHECK_DIR / "check.mjs"), str(path)], capture_output=True, text=True, timeout=120
    )


def test_the_podmonitor_matches_the_operators_schema(rendered, tmp_path):
    proc = check(rendered, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "OK: 1 PodMonitor(s)"


def test_the_check_refuses_a_broken_podmonitor(rendered, tmp_path):
    (pm,) = copy.deepcopy(of_kind(rendered, "PodMonitor"))
    pm["spec"]["podMetricsEndpoints"][0]["interval"] = "5 seconds"
    pm["spec"]["podMetricsEndpoints"][1]["honorLabels"] = "yes"
    proc = check([pm], tmp_path)
    assert proc.returncode == 1
    assert "podMetricsEndpoints/0/interval must match pattern" in proc.stderr
    assert "podMetricsEndpoints/1/honorLabels must be boolean" in proc.stderr
