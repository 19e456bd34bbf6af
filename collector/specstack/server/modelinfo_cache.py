"""vLLM's model-class cache ($VLLM_CACHE_ROOT/modelinfos) filled while a held server imports (#42).

On a miss, vLLM 0.32.0's API server inspects the model's class in a subprocess that imports vLLM again
(model_executor/models/registry.py, `_run_in_subprocess`: it keeps CUDA out of the API server) and caches what it
found, once per cache root and class: 20-21 s of a fresh machine's first start on a lent H100, after the held
server's release. held_serve.py starts this module's process before its own imports instead, so the inspection
runs beside them and the pre-flight, and the released server reads the cache.

The process is its own, never the server's, so CUDA stays out of the server as vLLM wants; in it vLLM's own
inspection runs in place of the subprocess it would start (this process is that subprocess), and vLLM's own code
hashes the class's module and writes the cache. Everything above `fill` is the standard library only: held_serve
calls it before importing vLLM.

Usage: python -m specstack.server.modelinfo_cache ARCH...
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path

from specstack.server import vllm_caches

# Written by the process once the cache holds every architecture it was given (the server's log then has it)
FILLED = "specstack: vLLM's model-class cache filled for"


def architectures(model_dirs: Iterable[str]) -> list[str]:
    """The architectures local model folders declare (config.json); a hub id or unreadable folder adds none."""
    found: list[str] = []
    for folder in model_dirs:
        try:
            declared = json.loads((Path(folder) / "config.json").read_text()).get("architectures") or []
        except (OSError, ValueError, AttributeError):
            continue
        found += [arch for arch in declared if isinstance(arch, str) and arch not in found]
    return found


def missing(archs: Iterable[str], folder: Path) -> list[str]:
    """Those with no cache file yet. vLLM names it <module>-<class>.json (dots as dashes) and its class is named
    after the architecture for most models; a class named otherwise counts as missing, and the process then
    finds vLLM's cache valid and writes nothing."""
    try:
        names = {p.name for p in folder.iterdir()}
    except OSError:
        names = set()
    return [arch for arch in archs if not any(name.endswith(f"-{arch}.json") for name in names)]


def start(model_dirs: Iterable[str]) -> subprocess.Popen | None:
    """The process filling the cache for these models' architectures, its output on this process's; None when
    the cache has them all already (the usual case after a machine's first start)."""
    archs = missing(architectures(model_dirs), vllm_caches.modelinfos())
    if not archs:
        return None
    return subprocess.Popen([sys.executable, "-m", __name__, *archs], stdin=subprocess.DEVNULL)


def fill(archs: list[str]) -> list[str]:
    """vLLM's own inspection of each architecture's class, in this process; the ones vLLM knows."""
    from vllm.model_executor.models import registry
    from vllm.plugins import load_general_plugins

    load_general_plugins()  # what vLLM's subprocess does first (a plugin may register a model)
    registry._run_in_subprocess = lambda fn: fn()  # this process is the subprocess vLLM would start
    known = [arch for arch in archs if arch in registry.ModelRegistry.models]
    for arch in known:
        registry.ModelRegistry.models[arch].inspect_model_cls()
    return known


def main(archs: list[str]) -> int:
    began = time.monotonic()
    known = fill(archs)
    print(
        f"{FILLED} {', '.join(known) or 'no architecture vLLM knows'} in {time.monotonic() - began:.1f} s", flush=True
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
