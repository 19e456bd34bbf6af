"""One harness per run at a time: an exclusive flock on results/<run-id>/.specstack.lock, taken before any server
starts and held until the harness ends. The kernel drops a flock with its process (SIGKILL included), so a killed
run never leaves a stale lock; the file stays (its content, who holds it, is read only while it is held).

What counts as one harness: this process, re-entrantly (a sweep holds the lock, each of its methods takes it again),
and the parts of one run started together, which share the holder's token (TOKEN_ENV): the slot processes of a
native parallel sweep (the parent holds it; pipeline/parallel.py), the collectors of one `make run`/`make sweep` (the
host flow holds it; host/lifecycle.py), the tasks of one Slurm submission (they run concurrently by design, on
nodes sharing the run folder: the first task to start holds it, the others join with the submission's token, and
`slurm submit` refuses a resubmit while any task queues or runs). A part whose token matches the holder's goes on
without a lock of its own. Across nodes, flock holds where the shared file system carries it (NFS does; Lustre with
-o flock); elsewhere each node sees only its own holders.

Standard library only: host/ (the host's plain python3) takes it for the compose flows.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import socket
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specstack.errors import UserError
from specstack.results import layout
from specstack.results.files import unwritable_message

TOKEN_ENV = "SPECSTACK_RUN_LOCK"  # the token of the run this process is a part of


class RunInUse(UserError):
    """Another harness measures into this run now."""


@dataclass
class _Holding:
    fd: int | None  # None: a part of a run another process holds the lock of
    token: str
    depth: int = 1


_held: dict[Path, _Holding] = {}


def holder(run_dir: Path) -> dict[str, Any]:
    """What the lock file says about who holds it ({} when unreadable or empty)."""
    try:
        held: dict[str, Any] = json.loads((Path(run_dir) / layout.RUN_LOCK).read_text() or "{}")
        return held
    except (OSError, ValueError):
        return {}


def _command() -> str:
    """This process's command line as a user typed it: `specstack sweep ...`, `python3 -m specstack.host run ...`."""
    argv = sys.argv or [""]
    prog = Path(argv[0]).name
    if prog == "__main__.py":
        prog = f"python3 -m specstack.{Path(argv[0]).parent.name}"
    return " ".join([prog or "python3", *argv[1:]])[:200]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def in_use_message(run_dir: Path, who: dict[str, Any]) -> str:
    pid, here = who.get("pid"), who.get("host") == socket.gethostname()
    what = f"pid {pid}" + ("" if here or not who.get("host") else f" on {who['host']}")
    if who.get("command"):
        what += f" ({who['command']})"
    if who.get("since"):
        what += f", since {who['since']}"
    gone = (
        " (that process is gone; processes it started still hold the lock)" if here and pid and not _alive(pid) else ""
    )
    return (
        f"run {Path(run_dir).name!r} is being measured by another specstack: {what}{gone}; one run per run id "
        f"at a time. Wait for it to end, stop it (kill {pid}), or use another --run-id"
    )


def token() -> str:
    """The token this process passes to the parts of its run (TOKEN_ENV)."""
    return os.environ.get(TOKEN_ENV) or _own_token


def new_token() -> str:
    """A token for the parts of one run started apart (the tasks of one Slurm submission: slurm/submit.py)."""
    return secrets.token_hex(8)


_own_token = new_token()


def acquire(run_dir: Path, *, token_: str | None = None) -> None:
    """Take the run's lock (or join the run holding it with this process's token, or `token_`), re-entrantly;
    RunInUse when another harness holds it; a UserError naming the fix when the run folder cannot be written."""
    key = Path(run_dir).resolve()
    if key in _held:
        _held[key].depth += 1
        return
    mine = token_ or token()
    try:
        key.mkdir(parents=True, exist_ok=True)
        fd = os.open(key / layout.RUN_LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as e:
        raise UserError(unwritable_message(key, e)) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        who = holder(key)
        if who.get("token") != mine:
            raise RunInUse(in_use_message(key, who)) from None
        _held[key] = _Holding(None, mine)
        return
    try:
        record = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "token": mine,
            "command": _command(),
            "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(record).encode() + b"\n", 0)
    except OSError as e:
        os.close(fd)
        raise UserError(unwritable_message(key, e)) from None
    _held[key] = _Holding(fd, mine)


def release(run_dir: Path) -> None:
    """Let go once the outermost holder in this process is done. A run folder that holds nothing but the lock file
    (a run refused before it wrote anything) is removed, so a refused run leaves no folder."""
    key = Path(run_dir).resolve()
    held = _held.get(key)
    if held is None:
        return
    held.depth -= 1
    if held.depth > 0:
        return
    del _held[key]
    if held.fd is None:
        return
    with contextlib.suppress(OSError):
        if [p.name for p in key.iterdir()] == [layout.RUN_LOCK]:
            (key / layout.RUN_LOCK).unlink()
            key.rmdir()
        else:
            os.ftruncate(held.fd, 0)  # no stale "who holds it" once nobody does
    os.close(held.fd)


@contextlib.contextmanager
def held(run_dir: Path, *, token_: str | None = None) -> Iterator[None]:
    acquire(run_dir, token_=token_)
    try:
        yield
    finally:
        release(run_dir)


def inheritable_fd(run_dir: Path) -> int | None:
    """The lock's descriptor, for a child process to inherit (subprocess pass_fds): the lock then lasts while any
    part of the run lives, even when the parent is killed first."""
    held = _held.get(Path(run_dir).resolve())
    return held.fd if held is not None else None
