"""A server that dies around a window: the window's reason leads with the death, not only its symptoms.

Real pieces: a real child process stands in for the server (it listens on its own socket, as the server a run
starts must: runtime.Server.verify) and serves a /metrics page rendered by prometheus_client; it is SIGKILLed
for real.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
import requests
from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from specstack import events
from specstack.config import metric_names as m
from specstack.measure import windows as windows_module
from specstack.measure.exporter import WindowExporter
from specstack.measure.windows import Outcome, Window, Windows
from specstack.results import layout
from specstack.results.bundle import MethodBundle
from specstack.server import identity
from specstack.server.runtime import Server

pytestmark = pytest.mark.unit


def metrics_page(finished: int = 0) -> bytes:
    reg = CollectorRegistry()
    Gauge("process_start_time_seconds", "st", registry=reg).set(1000.0)
    Counter("vllm:spec_decode_num_drafts", "d", ["model_name", "engine"], registry=reg).labels("m", "0").inc(3)
    success = Counter(m.REQUEST_SUCCESS, "s", ["model_name", "engine", "finished_reason"], registry=reg)
    success.labels("m", "0", "length").inc(finished)
    return generate_latest(reg)


# The stand-in server: one process (own session, as start_native starts vLLM) that listens and serves the page;
# SIGUSR1 closes its socket while it lives on (a /metrics gone on a live server).
_SERVE = """
import http.server, signal, sys, threading, time
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_GET(self):  # the page as the file holds it now (a test replaces it to move the counters)
        self.send_response(200); self.send_header("Content-Type", "text/plain; version=0.0.4"); self.end_headers()
        self.wfile.write(open(sys.argv[1], "rb").read())
httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
def close(*_):
    threading.Thread(target=lambda: (httpd.shutdown(), httpd.server_close())).start()
signal.signal(signal.SIGUSR1, close)
print(httpd.server_address[1], flush=True)
httpd.serve_forever()
time.sleep(600)
"""


class FakeVllm:
    """A real process that serves /metrics on its own socket and can be killed."""

    def __init__(self, tmp_path):
        page = tmp_path / "metrics.txt"
        page.write_bytes(metrics_page())
        self.process = subprocess.Popen(
            [sys.executable, "-c", _SERVE, str(page)], stdout=subprocess.PIPE, text=True, start_new_session=True
        )
        port = int(self.process.stdout.readline())
        self.server = Server(
            base_url=f"http://127.0.0.1:{port}", served_model_name="m", runtime="native", process=self.process
        )

    def metrics_down(self):
        self.process.send_signal(signal.SIGUSR1)
        while identity.listeners("127.0.0.1", self.server.address[1]):
            time.sleep(0.02)

    def die(self):
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def close(self):
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()


@pytest.fixture
def vllm(tmp_path):
    v = FakeVllm(tmp_path)
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
    assert window.reason.startswith("vLLM server exited with code -9 during the window; /metrics unreachable after"), (
        window.reason
    )


def test_death_with_failed_requests_leads_with_the_exit(vllm, tmp_path):
    def body():
        vllm.die()
        vllm.process.wait()
        return Outcome(error="3 of 4 bench requests failed")

    window = run_window(vllm, tmp_path, body)
    assert window.status == "failed"
    assert window.reason.startswith(
        "vLLM server exited with code -9 during the window; 3 of 4 bench requests failed; /metrics unreachable after"
    ), window.reason


def test_metrics_gone_on_a_live_server_claims_no_death(vllm, tmp_path):
    def body():
        vllm.metrics_down()
        return Outcome()

    window = run_window(vllm, tmp_path, body)
    assert window.status == "failed"
    assert window.reason.startswith("/metrics unreachable after"), window.reason
    assert "exited" not in window.reason


def test_a_window_records_who_used_the_cpu(vllm, tmp_path):
    def body():  # a bench client that reported 0.8 CPU-s of its own as it exited
        time.sleep(0.2)
        return Outcome(bench_pid=2**22 + 1, bench_cpu=0.8)

    cpu = run_window(vllm, tmp_path, body).cpu
    assert cpu["bench"] == pytest.approx(0.8) and cpu["bench_share_of_core"] > 0
    assert cpu["server"] is not None and cpu["other"] is not None and cpu["collector"] is not None
    assert cpu["cores"] == os.cpu_count() and cpu["seconds"] >= 0.2 and "not_measured" not in cpu


def test_a_server_without_a_local_process_leaves_other_cpu_unmeasured(vllm, tmp_path):
    vllm.server.process = None  # as an attached server's: its CPU cannot be told from other processes'
    window, _ = Windows(vllm.server, MethodBundle(tmp_path, "r", "baseline")).run(
        Window(name="chat", phase="acceptance"), Outcome
    )
    vllm.server.process = vllm.process
    assert window.cpu["server"] is None and window.cpu["other"] is None and window.cpu["bench"] is None
    assert "server" in window.cpu["not_measured"] and window.cpu["other_or_server"] >= 0


def test_the_exporter_serves_the_windows_own_start_and_end(vllm, tmp_path, monkeypatch):
    """Prometheus must store the instants the record holds, however long the work after the body takes."""
    load1 = windows_module._load1

    def slow_load1() -> float | None:  # a loaded host: reading the load takes 0.2 s
        time.sleep(0.2)
        return load1()

    monkeypatch.setattr(windows_module, "_load1", slow_load1)
    exporter = WindowExporter(port=0)
    try:
        windows = Windows(
            vllm.server, MethodBundle(tmp_path, "r", "baseline"), exporter, labels={"run_id": "r", "method": "m"}
        )
        window, _ = windows.run(Window(name="bench/code-c1-r0", phase="bench", task="code", concurrency=1), Outcome)
        page = requests.get(f"http://127.0.0.1:{exporter.port}/metrics", timeout=5).text
    finally:
        exporter.shutdown(max_wait=0)
    served = {s.name: s.value for f in text_string_to_metric_families(page) for s in f.samples}
    assert served[m.WINDOW_START] == window.start and served[m.WINDOW_END] == window.end, (served, window)
    assert exporter.windows[0]["start"] == window.start and exporter.windows[0]["end"] == window.end


def test_a_window_opens_on_one_reading_where_it_agrees_with_the_last_window_s_close(vllm, tmp_path):
    """#42: the close of a window was settled by two agreeing readings; where nothing ran since, the next window's
    first reading agrees with it and opens the window, instead of a second fetch after the wait."""
    windows = Windows(vllm.server, MethodBundle(tmp_path, "r", "baseline"))
    recorder = events.Recorder()
    with events.listening(recorder):
        for name in ("acceptance/code", "acceptance/chat"):
            window, _ = windows.run(Window(name=name, phase="acceptance", task=name[11:]), Outcome)
            assert window.status == "ok", window.reason
    fetches = {(f["name"], f["when"]): f["fetches"] for f in recorder.named("window.snapshot")}
    assert fetches == {
        ("acceptance/code", "before"): 2,  # nothing to agree with: two readings
        ("acceptance/code", "after"): 2,
        ("acceptance/chat", "before"): 1,  # the same counters as the close before it
        ("acceptance/chat", "after"): 2,
    }
    # the window's before file is a reading of its own, as every edge's
    served = (tmp_path / "metrics.txt").read_text()
    assert windows.bundle.path(layout.snapshot("acceptance/chat", "before")).read_text() == served


@pytest.mark.parametrize(("counted", "fetches"), [(3, 1), (2, 2)])
def test_a_window_closes_on_one_reading_where_vllm_counts_every_answer_finished(vllm, tmp_path, counted, fetches):
    """#42: a close was settled by two agreeing readings 50 ms apart; where the first already counts every request
    the window saw answered finished, it holds the window's last step (measure/snapshots.py) and closes it."""
    page = tmp_path / "metrics.txt"

    def body() -> Outcome:  # three answers; vLLM's page counts `counted` of them finished
        staged = tmp_path / "next.txt"
        staged.write_bytes(metrics_page(finished=counted))
        os.replace(staged, page)
        return Outcome(requests_sent=3)

    recorder = events.Recorder()
    with events.listening(recorder):
        window, _ = Windows(vllm.server, MethodBundle(tmp_path, "r", "baseline")).run(
            Window(name="acceptance/code", phase="acceptance", task="code"), body
        )
    assert window.status == "ok", window.reason
    closes = [f["fetches"] for f in recorder.named("window.snapshot") if f["when"] == "after"]
    assert closes == [fetches]
