"""Host pre-check before a build writes gigabytes: is there room where Docker keeps its images?

`make images PLATFORM=cpu` (images/images.mk) takes at its peak 8.8 GB more than before it started (the vLLM
image's venv layer, written in the build's container, then committed) for about 5 GB of images (docs/measured.md,
"Disk"). Out of room, it dies minutes in, in the middle of a layer ("no space left on device"); this says so
before anything is built, with the fix.

Only an engine on this host is checked: with DOCKER_HOST naming another host, its disk is not this one's.

Standard library only and Python 3.8 compatible: make runs it with the host's python3
(`python3 -m specstack.host check-disk`), before any image is built.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Mapping

GB = 10**9


def docker_root(docker: str, env: Mapping[str, str]) -> str | None:
    """Docker's data folder (`docker info`), or None when the engine is another host's or does not answer."""
    host = env.get("DOCKER_HOST", "")
    if host and not host.startswith("unix://"):
        return None
    try:
        out = subprocess.run(
            [docker, "info", "--format", "{{.DockerRootDir}}"], capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    root = out.stdout.strip()
    return root if out.returncode == 0 and root else None


def free_bytes(path: str) -> int:
    """Free bytes for an unprivileged writer on the file system holding `path`, read at the nearest folder
    this user may look at (Docker's own folder is root's)."""
    here = Path(path)
    for candidate in (here, *here.parents):
        try:
            return shutil.disk_usage(candidate).free
        except OSError:
            continue
    raise OSError(f"no folder of {path} can be read")


def problem(path: str, need_gb: float, free: int, purpose: str) -> str | None:
    """Why `purpose` would run out of room under `path`, with the fix; None when `free` bytes are enough."""
    if free >= need_gb * GB:
        return None
    return (
        f"{purpose} needs about {need_gb:g} GB free where Docker keeps its images ({path}), and "
        f"{free / GB:.1f} GB are free there. Free space on that disk, then rerun: `docker system prune -a` "
        "removes every image no container uses, `docker builder prune` the build cache; or give Docker a larger "
        "disk (dockerd's data-root)."
    )


def check(docker: str, need_gb: float, purpose: str, env: Mapping[str, str] | None = None) -> str | None:
    """The problem with the local engine's disk, or None (also when the engine is not on this host)."""
    root = docker_root(docker, os.environ if env is None else env)
    if root is None:
        return None
    return problem(root, need_gb, free_bytes(root), purpose)
