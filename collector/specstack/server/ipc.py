"""The IPC folder of a native server (VLLM_RPC_BASE_PATH): where vLLM puts the ZMQ socket files between its API
server and engine core, a folder of the server's own so that nothing of it is left in the temp folder.

It is removed when the server stops (runtime.stop_native), and by the server's watchdog when the harness dies
(leash.py). Should both be killed at once (`kill -9` of the harness and of the whole server group), the folder
is cleared by the next native start: its name carries the harness's pid, and a folder whose harness is dead is
no one's (its sockets, if a server still used them, stay connected: removing the path does not close them).
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path

import psutil

PREFIX = "specstack-vllm-ipc-"
_OWNED = re.compile(rf"{PREFIX}(\d+)-")


def new_folder() -> Path:
    """A new IPC folder for a server this process starts, once left-over folders of dead harnesses are cleared."""
    clear_left_over()
    return Path(tempfile.mkdtemp(prefix=f"{PREFIX}{psutil.Process().pid}-"))


def clear_left_over(parent: Path | None = None) -> list[Path]:
    """Remove the IPC folders whose harness (the pid in the name) is gone or a zombie; returns them. A folder
    of an earlier specstack (no pid in its name) is left alone: whose it is cannot be told."""
    removed = []
    for folder in Path(parent or tempfile.gettempdir()).glob(f"{PREFIX}*"):
        owner = _OWNED.match(folder.name)
        if owner and folder.is_dir() and not _alive(int(owner.group(1))):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.AccessDenied:  # another user's process (hidden /proc): not ours to judge
        return True
    except psutil.Error:
        return False
