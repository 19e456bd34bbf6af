"""The bounded wait for a port between two servers, with real listening processes (no vLLM needed):
the next server starts once the port is released, and a holder that never lets go makes the start fail
clearly, naming the holder, instead of starting a second server."""

from __future__ import annotations

import time

import pytest

from specstack.config import methods
from specstack.errors import UserError
from specstack.server import runtime
from tests.support import free_port

from ..integration.faults import hold_port as hold

pytestmark = pytest.mark.unit


@pytest.fixture
def port():
    return free_port()


def test_the_wait_ends_when_the_holder_releases_the_port(port):
    holder = hold(port, 1.5)
    try:
        assert not runtime.port_free("127.0.0.1", port)
        runtime.wait_port_free("127.0.0.1", port, 30)
        assert holder.wait(5) == 0, "the wait returned while the holder still ran"
        assert runtime.port_free("127.0.0.1", port)
    finally:
        holder.kill()


def test_the_wait_is_bounded_and_names_the_holder(port):
    holder = hold(port, 300)
    try:
        t0 = time.monotonic()
        with pytest.raises(runtime.PortNotReleased) as e:
            runtime.wait_port_free("127.0.0.1", port, 1.0, after="the previous server of this sweep stopped")
        assert time.monotonic() - t0 < 15
        message = str(e.value)
        assert f"port 127.0.0.1:{port} is still in use 1 s after the previous server of this sweep stopped" in message
        assert f"pid {holder.pid} (" in message and "socket" in message  # who, with its command line
        assert "refusing to start a second server" in message and "rerun the same command" in message
        assert holder.poll() is None, "the holder must be left alone"
    finally:
        holder.kill()
        holder.wait(5)


def test_start_native_in_a_sweep_fails_before_spawning_anything(port, tmp_path, monkeypatch):
    """start_native with port_wait: the bounded wait runs before any `vllm serve` is spawned."""
    plan = methods.build(
        "baseline", model_set_name="tiny", platform="cpu-native", models_dir=str(tmp_path), extra={"port": port}
    )
    holder = hold(port, 300)
    spawned = []
    monkeypatch.setattr(runtime.subprocess, "Popen", lambda *a, **k: spawned.append(a) or pytest.fail("spawned"))
    try:
        with pytest.raises(runtime.PortNotReleased):
            runtime.start_native(plan, tmp_path / "server.log", 5, port_wait=0.5)
        with pytest.raises(UserError, match="already in use"):  # outside a sweep: at once, as bad input
            runtime.start_native(plan, tmp_path / "server.log", 5)
        assert spawned == [] and not (tmp_path / "server.log").exists()
    finally:
        monkeypatch.undo()
        holder.kill()
        holder.wait(5)
