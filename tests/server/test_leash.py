"""The leash (server/leash.py) on plain processes: a stand-in harness starts `sleep` through the launcher exactly as
start_native starts `vllm serve` (own session, leash.command), and is then SIGKILLed. The sleep stands in for the
mechanism only (a group to kill, an IPC folder to clear); the real engine is tests/integration/test_kill9.py."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from specstack.server import ipc, leash
from specstack.server.runtime import Server, stop_native

pytestmark = pytest.mark.unit

# The harness: starts the leashed sleep in a session of its own, prints its pid, then waits to be killed.
HARNESS = """
import subprocess, sys, time
from specstack.server import leash
p = subprocess.Popen(leash.command(["sleep", "600"], sys.argv[1]), start_new_session=True)
print(p.pid, flush=True)
time.sleep(600)
"""


def wait_until(condition, seconds: float, what: str):
    deadline = time.monotonic() + seconds
    while not (found := condition()):
        assert time.monotonic() < deadline, f"no {what} after {seconds:.0f} s"
        time.sleep(0.05)
    return found


def leashed_sleep(tmp_path: Path) -> tuple[subprocess.Popen, int, Path]:
    """(harness, the sleep's pid = its group, the IPC folder), once the watchdog runs beside the sleep."""
    folder = tmp_path / "ipc"
    folder.mkdir()
    (folder / "socket-file").write_text("")
    harness = subprocess.Popen(
        [sys.executable, "-c", HARNESS, str(folder)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    try:
        group = int(harness.stdout.readline())
        wait_until(lambda: started(group), 30, "watchdog beside the sleep")
    except BaseException:
        harness.kill()  # its watchdog, if any, then ends the sleep
        raise
    return harness, group, folder


def started(group: int) -> bool:
    """The launcher has become the sleep, and its watchdog runs beside it (nothing else is in the group)."""
    members = leash.group_members(group)
    try:
        return (
            len(members) == 2
            and psutil.Process(group).cmdline() == ["sleep", "600"]
            and all("watch" in psutil.Process(p).cmdline() for p in members if p != group)
        )
    except psutil.Error:  # the launcher's short-lived first child, gone between the two looks
        return False


def test_the_server_is_the_launched_process_itself(tmp_path):
    """exec: the pid the harness holds is the server's (same session, group leader), and the watchdog's command
    line names no server argument."""
    harness, group, _ = leashed_sleep(tmp_path)
    try:
        assert psutil.Process(group).cmdline() == ["sleep", "600"]
        assert os.getsid(group) == group
        [watchdog] = [p for p in leash.group_members(group) if p != group]
        assert "sleep" not in psutil.Process(watchdog).cmdline()
    finally:
        harness.kill()
        harness.wait()
        wait_until(lambda: not leash.group_members(group), 30, "end of the group")


def test_sigkill_of_the_harness_kills_the_group_and_clears_the_ipc_folder(tmp_path):
    harness, group, folder = leashed_sleep(tmp_path)
    harness.send_signal(signal.SIGKILL)
    # left a zombie on purpose (not reaped): a dead harness whose parent has not waited yet counts as gone
    wait_until(lambda: not leash.group_members(group), 30, "end of the server's group after the harness died")
    wait_until(lambda: not folder.exists(), 30, "removal of the IPC folder")
    harness.wait()


# A server that moves its output after the launch, as a held one does at its release (server/held_serve.py)
MOVES_ITS_OUTPUT = """
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_APPEND)
os.dup2(fd, 1)
print("moved", flush=True)
time.sleep(600)
"""


def test_the_watchdog_says_why_it_killed_into_the_server_s_log_as_it_is_then(tmp_path):
    """The line that tells a reader of a killed run's server log what happened goes where the server writes at
    that moment, not where the launcher's output went (a held server's output before its release)."""
    launched, moved = tmp_path / "launched.log", tmp_path / "moved.log"
    harness_code = HARNESS.replace('["sleep", "600"]', "[sys.executable, '-c', sys.argv[2], sys.argv[3]]").replace(
        "start_new_session=True)", f"start_new_session=True, stdout=open({str(launched)!r}, 'ab'))"
    )
    harness = subprocess.Popen(
        [sys.executable, "-c", harness_code, leash.NO_FOLDER, MOVES_ITS_OUTPUT, str(moved)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    group = int(harness.stdout.readline())
    wait_until(lambda: moved.exists() and "moved" in moved.read_text(), 30, "the server's moved output")
    harness.send_signal(signal.SIGKILL)
    wait_until(lambda: not leash.group_members(group), 30, "end of the server's group after the harness died")
    harness.wait()
    assert "specstack watchdog: the harness" in moved.read_text(), (moved.read_text(), launched.read_text())
    assert "specstack watchdog" not in launched.read_text()


def test_a_stopped_server_takes_its_watchdog_along(tmp_path):
    """While the harness lives, stop_native's killpg ends the watchdog with the server (no group member left)."""
    folder = tmp_path / "ipc"
    folder.mkdir()
    process = subprocess.Popen(leash.command(["sleep", "600"], str(folder)), start_new_session=True)
    wait_until(lambda: started(process.pid), 30, "watchdog beside the sleep")
    server = Server("http://127.0.0.1:9", "x", "native", process=process, ipc_dir=folder)
    stop_native(server, timeout=10)
    assert leash.group_members(process.pid) == [] and not folder.exists()


def test_left_over_ipc_folders_of_dead_harnesses_are_cleared(tmp_path):
    dead = subprocess.Popen(["true"])
    dead.wait()
    mine = tmp_path / f"{ipc.PREFIX}{os.getpid()}-abc"
    gone = tmp_path / f"{ipc.PREFIX}{dead.pid}-abc"
    unknown = tmp_path / f"{ipc.PREFIX}abc"  # an earlier specstack's: no owner in the name
    for folder in (mine, gone, unknown):
        folder.mkdir()
    assert ipc.clear_left_over(tmp_path) == [gone]
    assert mine.exists() and unknown.exists() and not gone.exists()
