"""A run ended by a signal leaves nothing behind: the real `specstack run` script on real vLLM (CPU, tiny models),
SIGTERM (what `timeout`, a scheduler or `kill` send) while its acceptance window is open. Within the grace
period the harness has stopped its server's process group (engine core included), the port is free, the method
is `baseline.failed-*` saying "interrupted (SIGTERM)", and the exit status is 128 + 15. Before this, SIGTERM
killed the harness on the spot and its server, in a session of its own, kept the GPU and the port."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from specstack.runs.native_server import INTERRUPT_GRACE
from specstack.server.runtime import port_free
from tests.integration.faults import assert_failed_bundle, group_gone, live_group_members, windows_by_name
from tests.support import free_port, is_vllm_serve

pytestmark = pytest.mark.integration

SPECSTACK = Path(sys.executable).with_name("specstack")


def wait_for(condition, seconds: float, proc: subprocess.Popen, what: str):
    deadline = time.monotonic() + seconds
    while not (found := condition()):
        assert proc.poll() is None, f"the run ended (code {proc.returncode}) before {what}:\n{proc.stderr.read()}"
        assert time.monotonic() < deadline, f"no {what} after {seconds:.0f} s"
        time.sleep(0.05)
    return found


def test_sigterm_mid_window_stops_the_server_and_fails_the_method(models_dir, tmp_path):
    port, results = free_port(), tmp_path / "results"
    proc = subprocess.Popen(
        [
            SPECSTACK,
            "run",
            "--method",
            "baseline",
            "--model-set",
            "tiny",
            "--platform",
            "cpu-native",
            "--models-dir",
            models_dir,
            "--port",
            str(port),
            "--results",
            results,
            "--run-id",
            "sigterm",
            "--tasks",
            "code",
            "--num-prompts",
            "16",
            "--acceptance-max-tokens",
            "512",
            "--warmup-requests",
            "1",
            "--skip-bench",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    run_dir = results / "sigterm"
    try:
        wait_for(
            lambda: list(run_dir.glob(".baseline.staging-*/snapshots/acceptance_code.before.prom")),
            300,
            proc,
            "acceptance window",
        )
        server_pid = int(wait_for(lambda: _serving_pid(port), 10, proc, "vllm serve process"))
        proc.send_signal(signal.SIGTERM)
        t0 = time.monotonic()
        code = proc.wait(INTERRUPT_GRACE + 30)
        seconds = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
    err = proc.stderr.read()
    assert code == 128 + signal.SIGTERM, err
    assert seconds < INTERRUPT_GRACE + 20, f"the harness took {seconds:.1f} s to stop"
    assert "Traceback" not in err, err
    assert "specstack: interrupted (SIGTERM)" in err
    assert group_gone(server_pid, within=1.0), (
        f"processes of the server's group outlived the harness: {live_group_members(server_pid)}"
    )
    assert port_free("127.0.0.1", port)
    [published] = run_dir.glob("baseline.failed-*")
    summary = json.loads((published / "summary.json").read_text())
    assert_failed_bundle(summary, published, run_dir)
    assert summary["error"] == "interrupted (SIGTERM); rerun the same command to resume"
    assert summary["error_type"] == "Interrupted"
    window = windows_by_name(summary)["acceptance/code"]
    assert window["status"] == "failed" and window["reason"] == "interrupted (SIGTERM)", window
    assert summary["server"]["pid"] == server_pid


def _serving_pid(port: int) -> int | None:
    import psutil

    for p in psutil.process_iter(["cmdline"]):
        cmd = p.info["cmdline"] or []
        if is_vllm_serve(cmd) and cmd[cmd.index("--port") + 1] == str(port):
            return p.pid
    return None
