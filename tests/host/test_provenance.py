"""collector/specstack/host/provenance.py: what a container record keeps of `docker inspect`."""

from __future__ import annotations

import json

import pytest

from specstack.host import provenance
from specstack.host.provenance import slot_of

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


def test_a_slot_is_found_on_the_host_by_index_or_uuid_and_inside_its_container():
    gpus = [{"index": "0", "uuid": "GPU-a", "name": "A"}, {"index": "1", "uuid": "GPU-b", "name": "B"}]
    host = {"source": "host", "gpus": gpus}
    assert slot_of(host, None, "1", "8-15") == {
        "asked": "1",
        "gpu_index": "1",
        "gpu_uuid": "GPU-b",
        "gpu_name": "B",
        "cpuset": "8-15",
    }
    assert slot_of(host, None, "GPU-a")["gpu_index"] == "0"
    assert "error" in slot_of(host, None, "2")
    inside = {"source": "container specstack-vllm-ngram-1", "gpus": [{**gpus[0], "uuid": "GPU-c"}]}
    assert slot_of(inside, None, "3") == {
        "asked": "3",
        "gpu_index": "3",
        "gpu_uuid": "GPU-c",
        "gpu_name": "A",
        "cpuset": None,
    }
    assert slot_of(None, {"server_cpuset": "1"}, "1") == {"cpuset": "1", "asked": "1"}
