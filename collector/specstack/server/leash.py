"""A native vLLM server dies with the harness that started it, however the harness dies (SIGKILL included).

`start_native` starts `vllm serve` in a session of its own, so that stopping its process group stops the engine
core and workers too. The price: nothing stops that group when the harness dies without a chance to clean up
(`kill -9`, the OOM killer, a crashed interpreter), and the server kept its port, memory and GPU. So the server
is started through this launcher (`command`), which leaves a watchdog in the new process group and then becomes
`vllm serve` itself (exec: same pid, same session, the group's leader). The watchdog polls the harness; once the
harness is gone (its pid dead, a zombie, or reused by another process) it kills the whole group and removes the
server's IPC folder. While the harness lives, `stop_native`'s killpg ends the watchdog with the rest of the group.

Why a watchdog and not PR_SET_PDEATHSIG: the parent-death signal reaches only the direct child (vLLM's API
server), and vLLM 0.32.0's engine core, worker and multiprocessing resource tracker do not watch their parent:
with the API server SIGKILLed alone they were all still running 30 s later (tiny CPU server, 2026-12-03). The
signal also fires when the parent *thread* exits, so a server started from a worker thread would die with that
thread. A watchdog in the group reaches every process vLLM starts, whatever thread started the server.

Only the standard library and psutil are imported: the launcher and the watchdog are processes of their own,
started with the harness's Python (`python -m specstack.server.leash`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import time

import psutil

POLL_SECONDS = 0.5  # how often the watchdog looks for its harness (and so how late, at most, it acts)
GONE_SECONDS = 30.0  # how long it waits for the SIGKILLed group to die before it removes the IPC folder
NO_FOLDER = "-"


def command(argv: list[str], ipc_dir: str | None) -> list[str]:
    """`argv` (vllm serve ...) behind the launcher, leashed to this process (the harness)."""
    me = psutil.Process()
    return [
        sys.executable,
        "-m",
        "specstack.server.leash",
        "launch",
        str(me.pid),
        repr(me.create_time()),
        ipc_dir or NO_FOLDER,
        "--",
        *argv,
    ]


def harness_alive(pid: int, started: float) -> bool:
    """The harness still runs: its pid lives, is not a zombie (a killed process its parent has not yet reaped)
    and is the same process (its start time, so a reused pid does not count)."""
    try:
        proc = psutil.Process(pid)
        return abs(proc.create_time() - started) < 0.01 and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes of a process group."""
    found = []
    for proc in psutil.process_iter(["status"]):
        try:
            if os.getpgid(proc.pid) == pgid and proc.info["status"] != psutil.STATUS_ZOMBIE:
                found.append(proc.pid)
        except (ProcessLookupError, PermissionError):
            continue
    return found


def launch(harness: str, started: str, ipc_dir: str, *, argv: list[str]) -> None:
    """In the server's new session: fork the watchdog, then become the server. The watchdog is forked twice so
    that it is no child of vLLM's (vLLM's process tree stays the one vLLM made), and it execs a command line of
    its own (no `serve`, no port: whatever looks for the server by its arguments must not find the watchdog)."""
    child = os.fork()
    if child == 0:
        if os.fork() == 0:
            os.execv(
                sys.executable, [sys.executable, "-m", "specstack.server.leash", "watch", harness, started, ipc_dir]
            )
        os._exit(0)
    os.waitpid(child, 0)
    os.execvp(argv[0], argv)


def watch(harness: int, started: float, ipc_dir: str) -> None:
    """Wait for the harness to go, then SIGKILL the group (vLLM mid-start ignores SIGTERM) and clear its IPC
    folder. The watchdog first leaves the group, so that the kill does not end it before its cleanup."""
    group = os.getpgrp()
    while harness_alive(harness, started):
        time.sleep(POLL_SECONDS)
    os.setpgid(0, 0)
    say = f"specstack watchdog: the harness (pid {harness}) is gone; killing the server's process group {group}"
    # into the server's log as it is now: a held server (held_serve.py) moved its output to the bundle's log at its
    # release, after this watchdog was started with the output of its held part
    try:
        with open(f"/proc/{group}/fd/1", "a") as server_output:
            print(say, file=server_output, flush=True)
    except OSError:  # the server (the group's leader) is gone already
        print(say, flush=True)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal.SIGKILL)
    deadline = time.monotonic() + GONE_SECONDS
    while group_members(group) and time.monotonic() < deadline:
        time.sleep(0.1)
    if ipc_dir != NO_FOLDER:
        shutil.rmtree(ipc_dir, ignore_errors=True)


def main(args: list[str]) -> None:
    if args[:1] == ["launch"] and "--" in args:
        cut = args.index("--")
        launch(*args[1:cut], argv=args[cut + 1 :])
    elif args[:1] == ["watch"] and len(args) == 4:
        watch(int(args[1]), float(args[2]), args[3])
    else:
        sys.exit(
            "usage: python -m specstack.server.leash launch PID START IPC_DIR -- ARGV... | watch PID START "
            "IPC_DIR (started by specstack's native runtime, not by hand)"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
