"""collector/specstack/host/targets.py: the Prometheus file_sd target file."""

from __future__ import annotations

import json

import pytest

from specstack.host import targets

pytestmark = pytest.mark.unit


def test_targets_file_is_file_sd_json_readable_by_another_user(tmp_path):
    path = tmp_path / "targets" / "vllm.json"
    targets.write_targets(path, "vllm-ngram:8000", {"method": "ngram", "run_id": "r1"})
    assert json.loads(path.read_text()) == [
        {"targets": ["vllm-ngram:8000"], "labels": {"method": "ngram", "run_id": "r1"}}
    ]
    assert path.stat().st_mode & 0o777 == 0o644
    targets.write_targets(path, None, {})
    assert json.loads(path.read_text()) == []
