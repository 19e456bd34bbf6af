"""runs/method_run.py holds the summary as its typed record while the method runs and converts it to JSON once,
where it is written: what run_method returns is that JSON, byte for byte the file, and Prometheus's view checked
later lands in it too (a sweep's list of summaries holds that dict)."""

from __future__ import annotations

import json

import pytest

from specstack.results import layout
from specstack.results.summary import PrometheusView, Summary
from specstack.runs.method_run import MethodRun, run_method
from tests.runs.test_attach import FakeEndpoints, options

pytestmark = pytest.mark.unit


@pytest.fixture
def plain_server():
    s = FakeEndpoints(None)  # a plain-decode server: eagle3 is refused before any window (fast)
    yield s
    s.close()


def test_run_method_returns_the_json_it_wrote(plain_server, tmp_path):
    server = plain_server
    summary, published = run_method(options(tmp_path, server.url, "eagle3"))
    on_disk = (published / layout.SUMMARY_FILE).read_text()
    assert on_disk == json.dumps(summary, indent=2, ensure_ascii=False, default=str) + "\n"  # files.atomic_write_json
    assert summary["status"] == "failed" and summary["error_type"] == "ServerContradiction"


def test_the_view_checked_later_updates_the_record_and_the_returned_json_in_place():
    run = MethodRun.__new__(MethodRun)  # only what _view_checked touches
    run.summary = Summary.make(
        method="ngram", prometheus_view=PrometheusView.make(status="pending", tasks={}), status="ok"
    )
    run.written = returned = run.summary.to_json()
    checked = run.summary.updated(prometheus_view=PrometheusView.make(status="checked", tasks={"code": {}}))
    run._view_checked(checked)
    assert run.summary is checked and run.written is returned
    assert json.dumps(returned) == json.dumps(checked.to_json())  # same keys, same order: the view in its place
