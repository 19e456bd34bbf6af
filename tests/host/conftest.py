from __future__ import annotations

import threading
from http.server import ThreadingHTTPServer

import pytest

from .fake_registry import Registry


@pytest.fixture()
def registry():
    """host:port of a fresh fake registry (tests/host/fake_registry.py) on loopback."""
    Registry.seen = []
    Registry.send_digest_header = True
    server = ThreadingHTTPServer(("127.0.0.1", 0), Registry)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()
