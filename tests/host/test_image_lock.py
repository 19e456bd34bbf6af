"""collector/specstack/host/image_lock.py: `make lock` against a real (local) registry API with token auth
(tests/host/fake_registry.py), and the lock file's format."""

from __future__ import annotations

import pytest

from specstack.host import HostError, image_lock
from specstack.host.image_ref import pin_problem

from .fake_registry import DIGEST

pytestmark = pytest.mark.unit


def test_lock_rewrites_tags_as_digests_and_keeps_comments(registry, tmp_path):
    lock = tmp_path / "images.lock"
    lock.write_text(f"# comment stays\nAPP_IMAGE={registry}/team/app:1.2.3\n\n")
    image_lock.lock(lock, log=lambda *_: None)
    assert lock.read_text() == f"# comment stays\nAPP_IMAGE={registry}/team/app:1.2.3@{DIGEST}\n\n"
    assert pin_problem(image_lock.read_lock(lock)["APP_IMAGE"]) is None
    image_lock.lock(lock, log=lambda *_: None)  # a locked file re-resolves its tag, same result
    assert image_lock.read_lock(lock)["APP_IMAGE"] == f"{registry}/team/app:1.2.3@{DIGEST}"


def test_read_lock_rejects_malformed_lines(tmp_path):
    lock = tmp_path / "images.lock"
    lock.write_text("vllm=vllm/vllm-openai:v0.32.0\n")
    with pytest.raises(HostError, match="NAME_IMAGE=reference"):
        image_lock.read_lock(lock)


def test_lock_pins_only_the_named_lines(registry, tmp_path):
    """PLATFORM=cpu pins its own images and leaves the optional Grafana line (no image of it here) alone."""
    lock = tmp_path / "images.lock"
    lock.write_text(f"APP_IMAGE={registry}/team/app:1.2.3\nGRAFANA_IMAGE=grafana/grafana:12.0.2\n")
    image_lock.lock(lock, log=lambda *_: None, keys=["APP_IMAGE"])
    assert image_lock.read_lock(lock) == {
        "APP_IMAGE": f"{registry}/team/app:1.2.3@{DIGEST}",
        "GRAFANA_IMAGE": "grafana/grafana:12.0.2",
    }
    with pytest.raises(HostError, match="no line for NOPE_IMAGE"):
        image_lock.lock(lock, log=lambda *_: None, keys=["NOPE_IMAGE"])
