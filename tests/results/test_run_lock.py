"""results/run_lock.py: one harness per run at a time, with real processes holding the lock: a second one is
refused naming the holder's pid, a SIGKILLed holder leaves no stale lock, the parts of one run (its token) share it,
and a run refused before it wrote anything leaves no folder."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from specstack.errors import UserError
from specstack.results import layout, run_lock

pytestmark = pytest.mark.unit

HOLD = """import sys, time
from specstack.results import run_lock
run_lock.acquire(sys.argv[1])
print("held", flush=True)
time.sleep(120)
"""


def holding(run_dir: Path, env: dict | None = None) -> subprocess.Popen:
    """Another process that holds (or joins) the run's lock until killed."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(run_dir)], stdout=subprocess.PIPE, text=True, env={**os.environ, **(env or {})}
    )
    assert proc.stdout is not None and proc.stdout.readline() == "held\n", proc.communicate()
    return proc


@pytest.fixture
def procs():
    started: list[subprocess.Popen] = []
    yield started
    for p in started:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_a_second_harness_is_refused_naming_the_holders_pid_and_a_killed_one_leaves_no_stale_lock(tmp_path, procs):
    run_dir = tmp_path / "r"
    procs.append(holder := holding(run_dir))
    with pytest.raises(run_lock.RunInUse) as refused:
        run_lock.acquire(run_dir)
    message = str(refused.value)
    assert f"pid {holder.pid}" in message and f"kill {holder.pid}" in message and "--run-id" in message
    assert isinstance(refused.value, UserError)  # exit 2, one line (cli/main.py)
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    run_lock.acquire(run_dir)  # the kernel dropped the lock with the process
    try:
        assert run_lock.holder(run_dir)["pid"] == os.getpid()
    finally:
        run_lock.release(run_dir)


def test_re_entrant_in_one_process_and_released_by_the_outermost(tmp_path, procs):
    run_dir = tmp_path / "r"
    with run_lock.held(run_dir):
        (run_dir / "manifest.json").write_text("{}")
        with run_lock.held(run_dir):  # a sweep's method takes it again
            pass
        other = subprocess.run([sys.executable, "-c", HOLD, str(run_dir)], capture_output=True, text=True, timeout=60)
        assert other.returncode != 0 and "RunInUse" in other.stderr, "still held after the inner release"
    procs.append(holding(run_dir))  # released: another harness may start


def test_the_parts_of_one_run_share_it_by_its_token(tmp_path, procs):
    run_dir = tmp_path / "r"
    with run_lock.held(run_dir):
        procs.append(holding(run_dir, {run_lock.TOKEN_ENV: run_lock.token()}))  # a slot of this run: joins
        stranger = subprocess.run(
            [sys.executable, "-c", HOLD, str(run_dir)],
            capture_output=True,
            text=True,
            env={**os.environ, run_lock.TOKEN_ENV: "another-run"},
            timeout=60,
        )
        assert stranger.returncode != 0 and f"pid {os.getpid()}" in stranger.stderr


def test_a_run_refused_before_it_wrote_anything_leaves_no_folder(tmp_path):
    with run_lock.held(tmp_path / "r"):
        assert (tmp_path / "r" / layout.RUN_LOCK).exists()
    assert not (tmp_path / "r").exists()
    with run_lock.held(tmp_path / "s"):
        (tmp_path / "s" / "manifest.json").write_text("{}")
    assert sorted(p.name for p in (tmp_path / "s").iterdir()) == [layout.RUN_LOCK, "manifest.json"]
    assert (tmp_path / "s" / layout.RUN_LOCK).read_text() == "", "a released lock still names a holder"


def test_an_inherited_descriptor_keeps_the_run_held_after_its_parent_is_killed(tmp_path, procs):
    """The native parallel sweep's slots inherit the lock (pass_fds): a SIGKILLed sweep's slots still running keep
    the run theirs until they end."""
    run_dir = tmp_path / "r"
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            """import subprocess, sys, time
from specstack.results import run_lock
run_lock.acquire(sys.argv[1])
fd = run_lock.inheritable_fd(sys.argv[1])
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], pass_fds=(fd,))
print(child.pid, flush=True)
time.sleep(120)
""",
            str(run_dir),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    procs.append(parent)
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()
    try:
        with pytest.raises(run_lock.RunInUse) as refused:
            run_lock.acquire(run_dir)
        assert "that process is gone; processes it started still hold the lock" in str(refused.value)
    finally:
        os.kill(child, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while True:  # the child is reaped by init: its descriptor closes when it is gone
        try:
            run_lock.acquire(run_dir)
            break
        except run_lock.RunInUse:
            assert time.monotonic() < deadline
            time.sleep(0.05)
    run_lock.release(run_dir)


def test_an_unwritable_run_folder_is_a_user_error_naming_the_fix(tmp_path):
    blocker = tmp_path / "a-file"  # root ignores permission bits: a folder below a regular file is unwritable
    blocker.write_text("")
    with pytest.raises(UserError, match="is not writable .*pass --results DIR pointing at a writable folder"):
        run_lock.acquire(blocker / "r")
