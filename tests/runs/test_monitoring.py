"""The Prometheus work kept off the measured path: one exporter for the whole process, and the view of a published
method checked in the background, written into its summary when done (PENDING on disk until then)."""

from __future__ import annotations

import json

import pytest

from specstack import events
from specstack.results.files import atomic_write_json
from specstack.results.summary import Summary
from specstack.runs.monitoring import PENDING, Monitoring
from tests.support import free_port

pytestmark = pytest.mark.unit


def test_the_view_is_checked_in_the_background_and_written_into_the_published_summary(tmp_path):
    dead = f"http://127.0.0.1:{free_port()}"  # Prometheus down: the check reports it missing, the run stands
    summary = {
        "method": "ngram",
        "prometheus_view": dict(PENDING),
        "windows": [{"phase": "acceptance", "task": "code", "start": 100.0, "settled_at": 105.0}],
    }
    atomic_write_json(tmp_path / "summary.json", summary)
    recorder = events.Recorder()
    with events.listening(recorder), Monitoring(None, dead, scrape_seconds=1.0) as monitoring:
        monitoring.check_view_later(
            Summary.of(summary),
            tmp_path,
            {"method": "ngram", "run_id": "r"},
            then=lambda checked: summary.update(checked.to_json()),
        )
        monitoring.settle()
    on_disk = json.loads((tmp_path / "summary.json").read_text())
    assert on_disk["prometheus_view"] == summary["prometheus_view"]
    assert summary["prometheus_view"]["status"] == "checked"
    assert summary["prometheus_view"]["tasks"]["code"]["status"] == "missing"
    assert "ConnectionError" in summary["prometheus_view"]["tasks"]["code"]["reason"]
    (step,) = [f for f in recorder.named("step.end") if f["name"] == "prometheus view"]
    assert step["deferred"] and step["method"] == "ngram"


def test_without_a_prometheus_url_nothing_is_checked(tmp_path):
    summary = {"method": "baseline", "prometheus_view": {"status": "not collected", "tasks": {}}, "windows": []}
    with Monitoring(None, None) as monitoring:
        monitoring.check_view_later(
            Summary.of(summary),
            tmp_path,
            {"method": "baseline", "run_id": "r"},
            then=lambda checked: summary.update(checked.to_json()),
        )
    assert summary["prometheus_view"]["status"] == "not collected" and not (tmp_path / "summary.json").exists()


def test_one_exporter_serves_every_method_of_the_process():
    with Monitoring(windows_port=0) as monitoring:
        first = monitoring.exporter
        assert first is not None and first.serving and monitoring.exporter is first
        first.open("acceptance", run_id="r", method="baseline", task="code")
        first.close()
        first.open("acceptance", run_id="r", method="ngram", task="code")
        first.close()
        assert [w["phase"] for w in first.windows] == ["acceptance", "acceptance"]
    assert not first.serving  # stopped at close, after its final-scrape wait (nobody scraped: no wait)
    assert Monitoring(windows_port=None).exporter is None


def test_the_first_window_waits_for_prometheus_first_sample_of_the_server():
    """A Prometheus that has no sample yet, then one: the wait returns once it has; none answering: False."""
    import json
    from http.server import BaseHTTPRequestHandler

    from tests.support import HttpStandIn, free_port

    asked = []

    class Prom(BaseHTTPRequestHandler):
        def do_GET(self):
            asked.append(self.path)
            values = [[1.0, "0"]] if len(asked) >= 3 else []
            body = json.dumps({"status": "success", "data": {"result": [{"values": values}] if values else []}})
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body.encode())

    prom = HttpStandIn(Prom)
    try:
        m = Monitoring(None, prom.url, scrape_seconds=0.2)
        assert m.await_first_sample({"run_id": "r", "method": "ngram"}) is True
        assert len(asked) == 3 and "spec_decode_num_drafts" in asked[0] and "method%3D%22ngram%22" in asked[0]
    finally:
        prom.close()
    assert Monitoring(None, f"http://127.0.0.1:{free_port()}", scrape_seconds=0.2).await_first_sample({}) is False
    assert Monitoring(None, None).await_first_sample({}) is True
