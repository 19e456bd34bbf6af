"""A harness killed with SIGKILL on the real engine (the real `specstack run` script, vLLM CPU, tiny models): no
cleanup of its runs, yet the next run of the run id is not refused by a stale lock, turns the hidden staging folder
the killed one left into `baseline.failed-*` naming the cause, and publishes its own result. (Whether the killed
harness's server dies with it is the server's own watchdog's matter; this test stops whatever still holds the port
before the rerun, so the rerun's start is not what it measures.)"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from specstack.results import layout
from specstack.results.reader import load_run
from tests.support import free_port

pytestmark = pytest.mark.integration

SPECSTACK = Path(sys.executable).with_name("specstack")


def kill_port_holders(port: int) -> None:
    """Whatever listens on the port, with its process group (a server started in a session of its own)."""
    for conn in psutil.net_connections("tcp"):
        if conn.laddr and conn.laddr.port == port and conn.status == psutil.CONN_LISTEN and conn.pid:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(os.getpgid(conn.pid), signal.SIGKILL)
    deadline = time.monotonic() + 30
    while any(
        c.laddr and c.laddr.port == port and c.status == psutil.CONN_LISTEN for c in psutil.net_connections("tcp")
    ):
        assert time.monotonic() < deadline, f"port {port} still held"
        time.sleep(0.2)


def test_the_run_after_a_sigkilled_harness_keeps_its_files_as_failed_and_runs(models_dir, tmp_path):
    port, results = free_port(), tmp_path / "results"
    argv = [
        str(SPECSTACK),
        "run",
        "--method",
        "baseline",
        "--model-set",
        "tiny",
        "--platform",
        "cpu-native",
        "--models-dir",
        str(models_dir),
        "--port",
        str(port),
        "--results",
        str(results),
        "--run-id",
        "killed",
        "--tasks",
        "code",
        "--num-prompts",
        "2",
        "--acceptance-max-tokens",
        "16",
        "--warmup-requests",
        "1",
        "--skip-bench",
        "--ready-timeout",
        "300",
    ]
    run_dir = results / "killed"
    with open(tmp_path / "first.log", "w") as log:
        first = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 600
        while not list(run_dir.glob(f".baseline{layout.STAGING_MARK}*/{layout.snapshot('warmup', 'after')}")):
            assert first.poll() is None, (tmp_path / "first.log").read_text()
            assert time.monotonic() < deadline, "no warm-up after 600 s"
            time.sleep(0.1)
        first.send_signal(signal.SIGKILL)  # mid-run: nothing of its cleanup runs
        first.wait()
    finally:
        if first.poll() is None:
            first.kill()
        kill_port_holders(port)
    (staging,) = [p for p in run_dir.iterdir() if layout.STAGING_MARK in p.name]
    rerun = subprocess.run(argv, capture_output=True, text=True, timeout=900)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert "a killed run's files, kept as failed" in " ".join(rerun.stderr.split())
    assert not staging.exists() and not [p for p in run_dir.iterdir() if layout.STAGING_MARK in p.name]
    (kept,) = run_dir.glob("baseline.failed-*")
    summary = json.loads((kept / layout.SUMMARY_FILE).read_text())
    assert summary["status"] == "failed" and summary["error"].startswith("the harness was killed (no clean exit)")
    assert (kept / layout.snapshot("warmup", "after")).stat().st_size > 0  # what it had measured is kept
    run = load_run(run_dir)
    assert list(run.methods) == ["baseline"] and [(f.name, f.superseded) for f in run.failed] == [("baseline", True)]
    assert json.loads((run_dir / layout.MANIFEST).read_text())["methods"]["baseline"]["status"] == "ok"
