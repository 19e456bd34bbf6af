"""collector/specstack/host/image_ref.py: image references split by Docker's rules."""

from __future__ import annotations

import pytest

from specstack.host import image_ref

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    "ref,expected",
    [
        ("vllm/vllm-openai:v0.32.0", ("docker.io", "vllm/vllm-openai", "v0.32.0", None)),
        ("ubuntu:24.04", ("docker.io", "library/ubuntu", "24.04", None)),
        ("ghcr.io/org/img:1.0.0@sha256:" + "a" * 64, ("ghcr.io", "org/img", "1.0.0", "sha256:" + "a" * 64)),
        ("localhost:5000/team/img:2.0.1", ("localhost:5000", "team/img", "2.0.1", None)),
        ("127.0.0.1:5000/img", ("127.0.0.1:5000", "img", None, None)),
    ],
)
def test_parse_reference(ref, expected):
    p = image_ref.parse_reference(ref)
    assert (p["registry"], p["repository"], p["tag"], p["digest"]) == expected
