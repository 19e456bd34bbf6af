"""collector/specstack/host/registry.py: a tag resolved to its digest by a real (local) registry API with
token auth (tests/host/fake_registry.py)."""

from __future__ import annotations

import pytest

from specstack.host import HostError
from specstack.host import registry as reg

from .fake_registry import DIGEST, Registry

pytestmark = pytest.mark.unit


def test_resolve_digest_follows_the_token_challenge(registry):
    assert reg.resolve_digest(f"{registry}/team/app:1.2.3") == DIGEST
    auth = [a for _, _, a in Registry.seen]
    assert auth[0] is None and auth[-1] == "Bearer t0ken"


def test_resolve_digest_hashes_the_manifest_when_the_header_is_missing(registry):
    Registry.send_digest_header = False
    assert reg.resolve_digest(f"{registry}/team/app:1.2.3") == DIGEST


def test_resolve_digest_names_a_missing_tag(registry):
    with pytest.raises(HostError, match="HTTP 404"):
        reg.resolve_digest(f"{registry}/team/app:9.9.9")
