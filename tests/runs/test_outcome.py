"""Whatever ends a method run, only a run whose every phase completed is published ok (runs/outcome.py): an
unexpected exception at each phase boundary leaves `<method>.failed-*` with the cause (type, message, traceback.txt),
the manifest says failed, the command ends with one line and exit 1, and a resumed sweep runs the method again.

The runs attach (url runtime) to a real HTTP server answering vLLM's endpoints (tests/runs/test_attach.py); the
issue's own case, `--url` at a server whose /metrics is not Prometheus text, is provoked without any patch."""

from __future__ import annotations

import http.server
import json
from pathlib import Path

import pytest

from specstack.errors import UserError
from specstack.results import layout
from specstack.results.summary import Summary
from specstack.runs import checks, method_run
from specstack.runs.method_run import MethodRun, run_method
from specstack.runs.outcome import Ending, MethodCrashed
from specstack.server.provenance import HelpHash
from tests.runs.test_attach import FakeEndpoints, options
from tests.support import HttpStandIn, run_main

pytestmark = pytest.mark.unit


class Boom(Exception):
    """An exception no phase expects (not ServerError, UserError or KeyboardInterrupt)."""


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setattr(HelpHash, "result", lambda self, timeout=120: self.cancel() or {"sha256": None})  # 10 s
    s = FakeEndpoints(None)  # a plain-decode server: the baseline agrees with it
    yield s
    s.close()


def raiser(where: str):
    def boom(*args, **kwargs):
        raise Boom(f"boom at {where}")

    return boom


def nothing(*args, **kwargs):
    return None


# (boundary, the MethodRun steps before it made to do nothing, the step that raises)
AFTER_THE_BUNDLE = [
    ("inputs", [], "_record_run_in_manifest"),
    ("server start", [], "start_server"),
    ("warm-up", [], "warm_up"),
    ("acceptance", ["warm_up"], "acceptance"),
    ("sampled", ["warm_up", "acceptance"], "sampled"),
    ("performance", ["warm_up", "acceptance", "sampled"], "performance"),
    ("stop", ["warm_up", "acceptance", "sampled", "performance"], "stop_server"),
    ("describe", ["warm_up", "acceptance", "sampled", "performance"], "describe"),
    ("publish", ["warm_up", "acceptance", "sampled", "performance"], "publish"),
]


def assert_kept_as_failed(run_dir: Path, method: str, cause: str) -> Path:
    assert not (run_dir / method).exists(), "a run that broke was published as a good result"
    assert not [p.name for p in run_dir.iterdir() if layout.STAGING_MARK in p.name], "a staging folder was left"
    (failed,) = run_dir.glob(f"{method}{layout.FAILED_MARK}*")
    summary = json.loads((failed / layout.SUMMARY_FILE).read_text())
    assert summary["status"] == "failed" and cause in summary["error"], summary["error"]
    assert summary["error_type"] == "Boom"
    assert "Boom" in (failed / layout.TRACEBACK_FILE).read_text()
    entry = json.loads((run_dir / layout.MANIFEST).read_text())["methods"][method]
    assert entry["status"] == "failed" and entry["dir"] == failed.name and cause in entry["error"]
    return failed


@pytest.mark.parametrize("where, before, step", AFTER_THE_BUNDLE, ids=[b for b, _, _ in AFTER_THE_BUNDLE])
def test_an_unexpected_exception_at_each_boundary_keeps_the_method_as_failed(
    server, tmp_path, monkeypatch, where, before, step
):
    for name in before:
        monkeypatch.setattr(MethodRun, name, nothing)
    monkeypatch.setattr(MethodRun, step, raiser(where))
    with pytest.raises(MethodCrashed) as raised:
        run_method(options(tmp_path, server.url, "baseline"))
    failed = assert_kept_as_failed(tmp_path / "r", "baseline", f"unexpected Boom: boom at {where}")
    assert str(failed) in str(raised.value) and "\n" not in str(raised.value)


def test_publication_that_breaks_after_the_folder_is_published_demotes_it(server, tmp_path, monkeypatch):
    """Everything measured and the folder renamed to `baseline/`, then the manifest cannot be written: the folder
    does not stay published as ok."""
    for name in ("warm_up", "acceptance", "sampled", "performance"):
        monkeypatch.setattr(MethodRun, name, nothing)
    real = method_run.update_manifest

    def manifest_breaks_for_the_method(run_dir, **fields):
        if "methods" in fields and not getattr(manifest_breaks_for_the_method, "done", False):
            manifest_breaks_for_the_method.done = True  # once: the failed entry that follows is written
            raise Boom("boom at the manifest")
        return real(run_dir, **fields)

    monkeypatch.setattr(method_run, "update_manifest", manifest_breaks_for_the_method)
    with pytest.raises(MethodCrashed):
        run_method(options(tmp_path, server.url, "baseline"))
    assert_kept_as_failed(tmp_path / "r", "baseline", "unexpected Boom: boom at the manifest")


@pytest.mark.parametrize("step", ["check_inputs", "load_tasks"], ids=["checks", "inputs-before-the-bundle"])
def test_before_the_bundle_exists_nothing_is_left(server, tmp_path, monkeypatch, step):
    """A check or the input loader that breaks (a bug: they turn every problem a user can cause into a one-line
    error) is let through with its traceback, before any folder of the method exists."""
    monkeypatch.setattr(checks if step == "check_inputs" else method_run, step, raiser(step))
    with pytest.raises(Boom):
        run_method(options(tmp_path, server.url, "baseline"))
    run_dir = tmp_path / "r"
    left = sorted(p.name for p in run_dir.iterdir()) if run_dir.exists() else []
    assert not [n for n in left if n.startswith("baseline") or layout.STAGING_MARK in n], left
    manifest = json.loads((run_dir / layout.MANIFEST).read_text()) if (run_dir / layout.MANIFEST).exists() else {}
    assert "baseline" not in (manifest.get("methods") or {})


def test_the_command_says_it_in_one_line_and_a_resumed_sweep_runs_it_again(server, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(MethodRun, "warm_up", raiser("warm-up"))
    argv = [
        "--results",
        tmp_path,
        "--run-id",
        "r",
        "--url",
        server.url,
        "--model-set",
        "tiny",
        "--platform",
        "cpu-native",
        "--tasks",
        "code",
        "--num-prompts",
        "2",
        "--acceptance-max-tokens",
        "8",
        "--warmup-requests",
        "1",
        "--skip-bench",
        "--ready-timeout",
        "10",
    ]
    result = run_main(capsys, ["run", "--method", "baseline", *argv])
    assert result.code == 1 and "Traceback" not in result.err, result.err
    (line,) = [x for x in result.err.splitlines() if x.startswith("specstack: error:")]
    assert "baseline failed: unexpected Boom: boom at warm-up" in line and "rerun the same command" in line.lower()
    first = assert_kept_as_failed(tmp_path / "r", "baseline", "boom at warm-up")
    monkeypatch.undo()
    monkeypatch.setattr(HelpHash, "result", lambda self, timeout=120: self.cancel() or {"sha256": None})
    posts = server.posts
    resumed = run_main(capsys, ["sweep", "--methods", "baseline", *argv])
    assert "already done" not in resumed.err
    assert server.posts > posts, "the resumed sweep did not run the method again"
    assert len(list((tmp_path / "r").glob("baseline.failed-*"))) == 2 and first.exists()


class NotPrometheus(HttpStandIn):
    """A server that answers /health and /v1/models as vLLM does, and /metrics with a page that is not Prometheus
    text (a line cut off inside its labels)."""

    def __init__(self):
        pages = {
            "/health": "",
            "/v1/models": json.dumps(
                {
                    "object": "list",
                    "data": [
                        {"id": "spec-demo", "object": "model", "root": "/somewhere/tiny-qwen3", "max_model_len": 2048}
                    ],
                }
            ),
            "/metrics": 'vllm:generation_tokens{model_name="spec-demo" upstream closed the connection\n',
        }

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                body = pages.get(self.path)
                self.send_response(200 if body is not None else 404)
                self.end_headers()
                self.wfile.write((body or "").encode())

            def do_POST(self):
                self.send_response(500)
                self.end_headers()

        super().__init__(Handler)


def test_a_url_whose_metrics_are_not_prometheus_text_is_never_published_ok(tmp_path, monkeypatch, capsys):
    """The issue's case, unpatched: it printed a traceback, published `baseline/` with "status": "ok", 0 checks and
    0 requests, and a sweep of the same run id then skipped it as already done."""
    monkeypatch.setattr(HelpHash, "result", lambda self, timeout=120: self.cancel() or {"sha256": None})
    server = NotPrometheus()
    try:
        argv = [
            "--results",
            tmp_path,
            "--run-id",
            "r",
            "--url",
            server.url,
            "--model-set",
            "tiny",
            "--platform",
            "cpu-native",
            "--tasks",
            "code",
            "--num-prompts",
            "2",
            "--acceptance-max-tokens",
            "8",
            "--warmup-requests",
            "1",
            "--skip-bench",
            "--ready-timeout",
            "10",
        ]
        result = run_main(capsys, ["run", "--method", "baseline", *argv])
        resumed = run_main(capsys, ["sweep", "--methods", "baseline", *argv])
    finally:
        server.close()
    assert result.code == 1 and "Traceback" not in result.err, result.err
    assert "specstack: error: baseline failed: unexpected ValueError" in " ".join(result.err.split())
    run_dir = tmp_path / "r"
    assert not (run_dir / "baseline").exists()
    failed = sorted(run_dir.glob("baseline.failed-*"))
    assert len(failed) == 2, "the resumed sweep did not run it again"
    summary = json.loads((failed[0] / layout.SUMMARY_FILE).read_text())
    assert summary["status"] == "failed" and summary["error_type"] == "ValueError"
    assert "prometheus_client" in (failed[0] / layout.TRACEBACK_FILE).read_text()
    assert json.loads((run_dir / layout.MANIFEST).read_text())["methods"]["baseline"]["status"] == "failed"
    assert resumed.code == 1 and "already done" not in resumed.err


def test_the_next_run_of_the_run_id_keeps_what_a_killed_one_left_as_failed(server, tmp_path, monkeypatch):
    """A harness SIGKILLed mid-run leaves its hidden staging folder; the next run of that run id (any method) turns
    it into `<method>.failed-*` with the cause before it starts (results/bundle.py keep_dead_staging)."""
    import signal
    import subprocess
    import sys

    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\nfrom specstack.results.bundle import "
            "MethodBundle\nprint(MethodBundle(sys.argv[1], 'r', 'ngram').staging, flush=True)\n"
            "time.sleep(120)",
            str(tmp_path),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    staging = Path(proc.stdout.readline().strip())
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    for name in ("warm_up", "acceptance", "sampled", "performance"):
        monkeypatch.setattr(MethodRun, name, nothing)
    run_method(options(tmp_path, server.url, "baseline"))
    (kept,) = (tmp_path / "r").glob("ngram.failed-*")
    assert not staging.exists()
    assert json.loads((kept / layout.SUMMARY_FILE).read_text())["error"].startswith("the harness was killed")
    assert json.loads((tmp_path / "r" / layout.MANIFEST).read_text())["methods"]["ngram"]["status"] == "failed"


def test_each_cause_goes_into_the_summary_record_first_cause_first():
    """Ending.record returns the summary with the cause, the keys where assigning them into its JSON put them."""
    start = Summary.make(method="m", status="running", error=None)
    ending = Ending()
    expected = ending.record(start, UserError("bad"))
    assert list(expected.to_json()) == ["method", "status", "error", "error_type"]
    assert (expected.error, expected.error_type) == ("bad", "UserError") and not ending.unexpected
    quiet = ending.record(start, UserError("bad"), window_failed=True)  # the failed windows say why
    assert (quiet.error, quiet.error_type) == (None, "UserError")
    then = ending.record(expected, Boom("late"))
    assert then.error == "bad; then, while finishing: unexpected Boom: late" and then.error_type == "UserError"
    stopped = ending.record(start, KeyboardInterrupt())
    assert stopped.error_type == "Interrupted" and ending.interrupted and start.error is None  # a copy each time
