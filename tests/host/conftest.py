from __future__ import annotations

import pytest

from ..support import HttpStandIn
from .fake_registry import Registry


@pytest.fixture()
def registry():
    """host:port of a fresh fake registry (tests/host/fake_registry.py) on loopback."""
    Registry.seen = []
    Registry.send_digest_header = True
    server = HttpStandIn(Registry)
    yield server.url.removeprefix("http://")
    server.close()
