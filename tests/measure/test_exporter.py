"""WindowExporter: the run-window series really served over HTTP, with the right values and labels."""

from __future__ import annotations

import threading
import time

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from specstack.config import metric_names as w
from specstack.measure.exporter import WindowExporter

pytestmark = pytest.mark.unit

LABELS = dict(run_id="r-42", method="eagle3")


def scrape(exp: WindowExporter) -> dict[str, dict[tuple, float]]:
    """{metric name: {label tuple: value}} as Prometheus would read it from the exporter."""
    resp = requests.get(f"http://127.0.0.1:{exp.port}/metrics", timeout=5)
    resp.raise_for_status()
    out: dict[str, dict[tuple, float]] = {}
    for family in text_string_to_metric_families(resp.text):
        for s in family.samples:
            out.setdefault(s.name, {})[tuple(s.labels[k] for k in w.WINDOW_LABELS)] = s.value
    return out


@pytest.fixture
def exporter():
    exp = WindowExporter(port=0)
    yield exp
    exp.shutdown(max_wait=0)


def test_no_port_keeps_windows_in_memory_only():
    exp = WindowExporter(port=None)
    assert not exp.serving and exp.port is None
    t0 = time.time()
    rec = exp.open(w.PHASE_WARMUP, **LABELS)
    assert exp.current is rec and rec["end"] is None
    assert exp.close() is rec
    exp.open(w.PHASE_BENCH, task="code", concurrency=8, **LABELS)
    exp.open(w.PHASE_ACCEPTANCE, task="chat", **LABELS)  # closes the bench window first
    with exp.window(w.PHASE_BENCH, task="chat", concurrency=1, **LABELS):
        pass
    assert exp.close() is None  # nothing open
    exp.shutdown()
    assert [(x["phase"], x["task"], x["concurrency"]) for x in exp.windows] == [
        ("warmup", "", ""),
        ("bench", "code", 8),
        ("acceptance", "chat", ""),
        ("bench", "chat", 1),
    ]
    for x in exp.windows:
        assert set(x) == {"phase", "task", "concurrency", "start", "end"}
        assert t0 <= x["start"] <= x["end"] <= time.time()
    for a, b in zip(exp.windows, exp.windows[1:]):
        assert a["end"] <= b["start"]


def test_serves_window_series_over_http(exporter):
    assert exporter.port and exporter._server.server_address[0] == "127.0.0.1"
    rec = exporter.open(w.PHASE_BENCH, task="code", concurrency=8, **LABELS)
    key = ("r-42", "eagle3", "bench", "code", "8")
    s = scrape(exporter)
    assert s[w.WINDOW_ACTIVE] == {key: 1.0}
    assert s[w.WINDOW_START][key] == pytest.approx(rec["start"], abs=1e-3)
    assert key not in s.get(w.WINDOW_END, {})  # no end time while open

    exporter.close()
    s = scrape(exporter)
    assert s[w.WINDOW_ACTIVE] == {key: 0.0}
    assert s[w.WINDOW_END][key] == pytest.approx(rec["end"], abs=1e-3)
    assert s[w.WINDOW_END][key] >= s[w.WINDOW_START][key]

    rec2 = exporter.open(w.PHASE_ACCEPTANCE, task="chat", **LABELS)
    key2 = ("r-42", "eagle3", "acceptance", "chat", "")
    s = scrape(exporter)
    assert s[w.WINDOW_ACTIVE] == {key: 0.0, key2: 1.0}  # the closed window stays at 0
    assert s[w.WINDOW_START][key2] == pytest.approx(rec2["start"], abs=1e-3)
    # only our own registry: no process_* / python_* series of the default registry
    assert set(s) <= {w.WINDOW_ACTIVE, w.WINDOW_START, w.WINDOW_END}
    assert [x["phase"] for x in exporter.windows] == ["bench", "acceptance"]


def test_reopened_label_set_drops_stale_end(exporter):
    exporter.open(w.PHASE_BENCH, task="code", concurrency=1, **LABELS)
    exporter.close()
    exporter.open(w.PHASE_BENCH, task="code", concurrency=1, **LABELS)
    key = ("r-42", "eagle3", "bench", "code", "1")
    s = scrape(exporter)
    assert s[w.WINDOW_ACTIVE][key] == 1.0 and key not in s.get(w.WINDOW_END, {})


def test_shutdown_closes_and_stops_serving():
    exp = WindowExporter(port=0)
    port = exp.port
    exp.open(w.PHASE_WARMUP, **LABELS)
    t = time.monotonic()
    exp.shutdown()  # never scraped: nothing to wait for
    assert time.monotonic() - t < 2
    assert exp.windows[0]["end"] is not None and not exp.serving
    with pytest.raises(requests.ConnectionError):
        requests.get(f"http://127.0.0.1:{port}/metrics", timeout=2)
    exp.shutdown()  # idempotent


def test_shutdown_waits_for_a_scrape_after_the_last_change():
    exp = WindowExporter(port=0)
    scrape(exp)  # something scrapes us, like Prometheus
    exp.open(w.PHASE_BENCH, task="code", concurrency=2, **LABELS)
    exp.close()
    seen = {}

    def late_scrape():
        time.sleep(0.5)
        seen.update(scrape(exp))

    thread = threading.Thread(target=late_scrape)
    thread.start()
    t = time.monotonic()
    exp.shutdown(max_wait=10)
    waited = time.monotonic() - t
    thread.join()
    assert 0.4 <= waited < 5
    key = ("r-42", "eagle3", "bench", "code", "2")
    assert seen[w.WINDOW_ACTIVE][key] == 0.0 and key in seen[w.WINDOW_END]


def test_open_needs_a_phase():
    with pytest.raises(ValueError):
        WindowExporter(port=None).open("", **LABELS)
