"""A server this run did not start is never measured (the H200 bug: a "baseline" measured on a left-over
draft_model server). A stand-in left-over server (its own process and session, answering /health, /v1/models and
/metrics with spec-decode counters) holds the port:

* `specstack run` refuses before anything starts, naming its pid (the port check connects, so it does not hang
  on SO_REUSEADDR semantics);
* where the port check is fooled (a sandboxed stack's permissive bind, or a process that takes the port after
  the check), the real `vllm serve` this run spawned is refused at its first /health answer: the socket is not
  its session's. The spawned server is killed at once, the run is `baseline.failed-*`, the stand-in untouched.
"""

from __future__ import annotations

import json

import psutil
import pytest

from specstack.runs import checks
from specstack.server import runtime
from tests.server.test_identity import stale_server
from tests.support import free_port, is_vllm_serve, run_main

pytestmark = pytest.mark.config

SMALL = (
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
    "60",
)


def args(models_dir, results, port) -> list:
    return [
        "run",
        "--method",
        "baseline",
        "--model-set",
        "tiny",
        "--platform",
        "cpu-native",
        "--models-dir",
        models_dir,
        "--results",
        results,
        "--run-id",
        "stale",
        "--port",
        port,
        *SMALL,
    ]


@pytest.fixture
def holder():
    port = free_port()
    proc = stale_server(port)
    proc.port = port
    yield proc
    proc.kill()
    proc.wait(10)


def vllm_serving(port: int) -> list[int]:
    """Live `vllm serve` processes asked to listen on this port."""
    found = []
    for p in psutil.process_iter(["cmdline", "status"]):
        cmd = p.info["cmdline"] or []
        if is_vllm_serve(cmd) and str(port) in cmd and p.info["status"] != psutil.STATUS_ZOMBIE:
            found.append(p.pid)
    return found


def test_a_held_port_is_refused_before_anything_starts(models_dir, tmp_path, capsys, holder):
    result = run_main(capsys, args(models_dir, tmp_path / "results", holder.port))
    assert result.code == 2, result.err
    assert f"port 127.0.0.1:{holder.port} is already in use (by pid {holder.pid} (" in result.err
    assert "stale_vllm.py" in result.err and "stop whatever listens there or pass --port" in result.err
    assert not (tmp_path / "results" / "stale" / "baseline").exists()
    assert holder.poll() is None, "the holder must be left alone"


def test_a_fooled_port_check_still_refuses_the_server_that_answers(models_dir, tmp_path, capsys, holder, monkeypatch):
    monkeypatch.setattr(runtime, "port_free", lambda host, port: True)  # the permissive bind
    monkeypatch.setattr(checks, "port_free", lambda host, port: True)
    result = run_main(capsys, args(models_dir, tmp_path / "results", holder.port))
    assert result.code == 1, result.err
    run_dir = tmp_path / "results" / "stale"
    assert not (run_dir / "baseline").exists()
    [failed] = run_dir.glob("baseline.failed-*")
    summary = json.loads((failed / "summary.json").read_text())
    assert summary["status"] == "failed" and summary["error_type"] == "ForeignServer", summary["error"]
    assert f"port 127.0.0.1:{holder.port} is answered by pid {holder.pid} (" in summary["error"]
    assert "not by the vllm serve this run started" in summary["error"] and f"`kill {holder.pid}`" in summary["error"]
    assert summary["windows"] == [], "a window ran on a server this run did not start"
    assert not (failed / "acceptance").exists() and not (failed / "warmup.jsonl").exists()
    assert vllm_serving(holder.port) == [], "the spawned vllm serve was left running"
    assert holder.poll() is None, "the holder must be left alone"
