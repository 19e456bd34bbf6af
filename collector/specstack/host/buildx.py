"""Host pre-check before `docker compose build`: is the buildx plugin one Docker Compose will build with?

Docker Compose 2.40.2 and later (docker/compose#13295, also in v5) builds through `docker buildx bake` when
BuildKit is on and the buildx plugin is installed, and then refuses a buildx older than 0.17.0 with
"compose build requires buildx 0.17 or later". Without the plugin it warns and builds with its own builder
instead, and with BuildKit off (DOCKER_BUILDKIT=0) it uses the classic builder: both work.
So only an *old* buildx stops a build. `problem()` says so, with the fixes, from the text
`docker buildx version` printed (None when the command failed: no plugin).

What works without buildx here: the GPU stack's two local images (collector, suffix) are built by
`docker compose build` with Compose's own builder; the CPU stack's images are built by `make images` with
plain `docker build`, which needs no buildx at all.

Standard library only and Python 3.8 compatible: make runs it with the host's python3
(`python3 -m specstack.host check-buildx`), before any image is built.
"""

from __future__ import annotations

import re
import subprocess
from typing import Mapping

MIN_VERSION = (0, 17, 0)
# "github.com/docker/buildx v0.17.1 257815a", "github.com/docker/buildx v0.29.1-desktop.1 ...",
# Debian's "github.com/docker/buildx 0.13.1+ds1-3 0.13.1+ds1-3": the first dotted version after the module.
_VERSION = re.compile(r"(?:^|\s)v?(\d+)\.(\d+)(?:\.(\d+))?")
_FALSE = ("0", "false", "f", "no", "off")


def parse_version(text: str) -> tuple[int, int, int] | None:
    """(major, minor, patch) of buildx from `docker buildx version` output; None if it names none."""
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        m = _VERSION.search(line.split("buildx", 1)[1] if "buildx" in line else line)
        if m:
            return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)
    return None


def _buildkit_off(env: Mapping[str, str]) -> bool:
    """DOCKER_BUILDKIT=0 (or false): Compose uses the classic builder and never asks buildx."""
    return env.get("DOCKER_BUILDKIT", "").strip().lower() in _FALSE


def problem(version_text: str | None, env: Mapping[str, str] | None = None) -> str | None:
    """Why `docker compose build` would refuse to build here, with the fix; None when it will build.

    version_text: what `docker buildx version` printed, or None when the command failed (no plugin).
    env: the environment compose will see (DOCKER_BUILDKIT=0 turns the check off)."""
    env = env or {}
    if version_text is None or _buildkit_off(env):
        return None  # no plugin: Compose builds with its own builder; BuildKit off: the classic builder
    version = parse_version(version_text)
    if version is None:
        return (
            f"`docker buildx version` printed {version_text.strip()[:200]!r}, which names no version; "
            "Docker Compose 2.40.2+ refuses to build with a buildx older than 0.17. Check the plugin "
            "(`docker buildx version`) or build without it: DOCKER_BUILDKIT=0 make ..."
        )
    if version >= MIN_VERSION:
        return None
    have = ".".join(str(v) for v in version)
    return (
        f"docker buildx {have} is older than 0.17: Docker Compose 2.40.2 and later refuse to build with it "
        '("compose build requires buildx 0.17 or later", docker/compose#13295), so the collector and '
        "suffix images cannot be built. Fix one of: upgrade the buildx plugin to 0.17 or newer "
        "(Docker's apt repository: docker-buildx-plugin); or build with the classic builder, "
        "DOCKER_BUILDKIT=0 make ...; or remove the old plugin (Compose then builds with its own builder). "
        "Without buildx everything works: Compose builds the GPU stack's two images itself, and "
        "`make images PLATFORM=cpu` uses plain `docker build`."
    )


def version_text(docker: str) -> str | None:
    try:
        out = subprocess.run([docker, "buildx", "version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout if out.returncode == 0 else None
