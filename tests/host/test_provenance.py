"""collector/specstack/host/provenance.py: what a container record keeps of `docker inspect`."""

from __future__ import annotations

import json

import pytest

from specstack.host import provenance

pytestmark = pytest.mark.unit


def test_container_record_drops_the_environment():
    inspect = {
        "Id": "x",
        "Name": "/specstack-vllm-ngram-1",
        "Image": "sha256:" + "1" * 64,
        "Config": {
            "Image": "vllm/vllm-openai:v0.32.0",
            "Env": ["HF_TOKEN=hf_secret"],
            "Labels": {"com.docker.compose.service": "vllm-ngram"},
        },
        "State": {},
    }
    rec = provenance.container_record(inspect, {"RepoDigests": []})
    assert "hf_secret" not in json.dumps(rec)
    assert rec["pinned_by"] == "image_id" and rec["service"] == "vllm-ngram"
