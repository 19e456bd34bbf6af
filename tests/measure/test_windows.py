"""A server that dies around a window: the window's reason leads with the death, not only its symptoms.

Real pieces: a real child process stands in for the server's process (SIGKILLed for real) and a real HTTP
server serves a /metrics page rendered by prometheus_client; it stops when the "server" dies.
"""
from __future__ import annotations

import http.server
import signal
import subprocess

import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest

from specstack.results.bundle import MethodBundle
from specstack.measure.windows import Outcome, Window, Windows
from specstack.server.runtime import Server
from tests.support import HttpStandIn

pytestmark = pytest.mark.unit


def metrics_page() -> bytes:
    reg = CollectorRegistry()
    Gauge("process_start_time_seconds", "st", registry=reg).set(1000.0)
    Counter("vllm:spec_decode_num_drafts", "d", ["model_name", "engine"], registry=reg).labels("m", "0").inc(3)
    return generate_latest(reg)


class FakeVllm:
    """A process that can be killed, plus its /metrics endpoint."""

    def __init__(self):
        page = metrics_page()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.end_headers()
                self.wfile.write(page)

        self.metrics = HttpStandIn(Handler)
        self.process = subprocess.Popen(["sleep", "60"])
        self.server = Server(base_url=self.metrics.url, served_model_name="m",
                             runtime="native", process=self.process)

    def metrics_down(self):
        self.metrics.close()

    def die(self):
        self.process.send_signal(signal.SIGKILL)
        self.metrics_down()

    def close(self):
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        try:
            self.metrics_down()
        except OSError:
            pass


@pytest.fixture
def vllm():
    v = FakeVllm()
    yield v
    v.close()


def run_window(vllm: FakeVllm, tmp_path, body) -> Window:
    windows = Windows(vllm.server, MethodBundle(tmp_path, "r", "baseline"))
    window, _ = windows.run(Window(name="bench/code-c1-r0", phase="bench", task="code", concurrency=1), body)
    return window


def test_death_after_the_last_answer_is_named_when_metrics_are_gone(vllm, tmp_path):
    def body():  # every answer came back, then the server died before the after-snapshot
        vllm.die()
        return Outcome()
    window = run_window(vllm, tmp_path, body)
    assert window.status == "failed"
    assert window.reason.startswith("vLLM server exited with code -9 during the window; /metrics unreachable after"), \
        window.reason


def test_death_with_failed_requests_leads_with_the_exit(vllm, tmp_path):
    def body():
        vllm.die()
        vllm.process.wait()
        return Outcome(error="3 of 4 bench requests failed")
    window = run_window(vllm, tmp_path, body)
    assert window.status == "failed"
    assert window.reason.startswith("vLLM server exited with code -9 during the window; 3 of 4 bench requests "
                                    "failed; /metrics unreachable after"), window.reason


def test_metrics_gone_on_a_live_server_claims_no_death(vllm, tmp_path):
    def body():
        vllm.metrics_down()
        return Outcome()
    window = run_window(vllm, tmp_path, body)
    assert window.status == "failed"
    assert window.reason.startswith("/metrics unreachable after"), window.reason
    assert "exited" not in window.reason
