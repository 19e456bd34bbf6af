"""A harness killed with SIGKILL (no handler runs, no `finally`) leaves no server behind: the real `specstack run`
script on real vLLM (CPU, tiny models), `kill -9` while its server loads (engine core up, not yet ready: vLLM
ignores SIGTERM then) and while its acceptance window is open. Within a bounded wait no process of the server's
group is left (API server, engine core, worker, resource tracker, the watchdog itself), the port is free and the
server's IPC folder is gone. Before server/leash.py the whole group kept running, holding the port."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from specstack.server import leash
from specstack.server.runtime import wait_port_free
from tests.integration.faults import group_gone, live_group_members
from tests.integration.test_interrupt import _serving_pid, wait_for
from tests.support import free_port

pytestmark = pytest.mark.integration

SPECSTACK = Path(sys.executable).with_name("specstack")


def engine_core_started(server_pid: int) -> bool:
    try:
        return any(p.name().startswith("VLLM::EngineCore") for p in psutil.Process(server_pid).children(recursive=True))
    except psutil.Error:
        return False


@pytest.mark.parametrize("when", ["loading", "measuring"])
def test_kill_9_of_the_harness_leaves_no_server(models_dir, tmp_path, when):
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
            "kill9",
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
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        server_pid = int(wait_for(lambda: _serving_pid(port), 120, proc, "vllm serve process"))
        if when == "loading":
            wait_for(lambda: engine_core_started(server_pid), 300, proc, "engine core")
            assert not list((results / "kill9").glob(".baseline.staging-*/warmup.jsonl")), "already measuring"
        else:
            wait_for(
                lambda: list((results / "kill9").glob(".baseline.staging-*/snapshots/acceptance_code.before.prom")),
                300,
                proc,
                "acceptance window",
            )
        ipc_dir = Path(psutil.Process(server_pid).environ()["VLLM_RPC_BASE_PATH"])
        assert ipc_dir.is_dir() and len(live_group_members(server_pid)) > 2, live_group_members(server_pid)
    except BaseException:
        proc.kill()
        raise
    proc.kill()  # SIGKILL: the harness runs no cleanup at all
    proc.wait()
    assert group_gone(server_pid, within=60), (
        f"processes of the server's group outlived the killed harness: {live_group_members(server_pid)}"
    )
    wait_port_free("127.0.0.1", port, 30, after="the harness was killed")
    # what happened is in the server's log the killed run left (a held server's log moved there at its release)
    [log] = (results / "kill9").glob(".baseline.staging-*/server.log")
    assert "specstack watchdog: the harness" in log.read_text(errors="replace"), log.read_text(errors="replace")[-2000:]
    # the watchdog removes the folder once the group it left is gone, a poll after the group_gone above saw it
    deadline = time.monotonic() + leash.GONE_SECONDS
    while ipc_dir.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not ipc_dir.exists(), f"the killed harness's server left its IPC folder {ipc_dir}"
