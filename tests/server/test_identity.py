"""Who answers on a native server's port (server/identity.py, runtime.port_free), with real processes and real
sockets: a listener of the session a run started is its own, any other is named by pid and command line."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from specstack.server import identity, runtime
from tests.support import free_port

pytestmark = pytest.mark.unit

STALE = Path(__file__).with_name("stale_vllm.py")


def stale_server(port: int) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, str(STALE), str(port)], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    assert proc.stdout.readline().strip() == "listening"
    return proc


@pytest.fixture
def stale():
    proc = stale_server(free_port())
    proc.port = int(proc.args[-1])
    yield proc
    proc.kill()
    proc.wait(10)


def test_a_listener_of_another_session_is_foreign_and_named(stale, tmp_path):
    own = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        found = identity.port_owner("127.0.0.1", stale.port, own.pid, tmp_path / "server.log")
        assert found.status == "foreign"
        assert [h.pid for h in found.holders] == [stale.pid]
        assert "stale_vllm.py" in found.holders[0].describe()
        message = identity.foreign_message("127.0.0.1", stale.port, found.holders, own.pid)
        assert f"is answered by pid {stale.pid} (" in message and f"`kill {stale.pid}`" in message
        assert f"not by the vllm serve this run started (pid {own.pid})" in message
    finally:
        own.kill()
        own.wait()


def test_a_listener_of_the_started_session_is_ours(stale, tmp_path):
    found = identity.port_owner("127.0.0.1", stale.port, stale.pid, None)  # the stand-in leads its own session
    assert found.status == "ours" and str(stale.pid) in found.evidence


def test_no_listener_visible_falls_back_to_the_servers_own_log(tmp_path):
    port = free_port()
    log = tmp_path / "server.log"
    assert identity.port_owner("127.0.0.1", port, 1, log).status == "unseen"
    log.write_text(f"(APIServer pid=1) INFO 12-01 [entry.py:140] Starting vLLM server on http://127.0.0.1:{port}\n")
    found = identity.port_owner("127.0.0.1", port, 1, log)
    assert found.status == "ours" and "log says it serves" in found.evidence
    assert identity.port_owner("127.0.0.1", port + 1, 1, log).status == "unseen"  # another port's line


def test_port_free_sees_a_listener_by_connecting(stale, monkeypatch):
    """A bind that succeeds beside a listener (a sandboxed stack did) does not make the port free."""
    assert not runtime.port_free("127.0.0.1", stale.port)
    monkeypatch.setattr(socket.socket, "bind", lambda self, addr: None)  # the permissive bind
    assert not runtime.port_free("127.0.0.1", stale.port)
    stale.kill()
    stale.wait(10)
    monkeypatch.undo()
    assert runtime.port_free("127.0.0.1", stale.port)


def test_verify_names_the_holder_when_another_process_answers(stale, tmp_path):
    own = subprocess.Popen(["sleep", "30"], start_new_session=True)
    server = runtime.Server(
        f"http://127.0.0.1:{stale.port}", "spec-demo", "native", log_path=tmp_path / "s.log", process=own
    )
    try:
        assert requests.get(f"{server.base_url}/health", timeout=5).ok  # healthy, and not ours
        with pytest.raises(runtime.ForeignServer, match=f"answered by pid {stale.pid} .*when window acceptance/code"):
            server.verify("when window acceptance/code was to open")
        own.kill()
        own.wait()
        with pytest.raises(runtime.ServerError, match=f"pid {own.pid}\\) exited with code -9 when window"):
            server.verify("when window bench/code-c1-r0 closed")
    finally:
        if own.poll() is None:
            own.kill()
