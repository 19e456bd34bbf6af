"""Where vLLM 0.32.0 keeps what a server's start compiles and inspects, read from the variables vLLM reads
(standard library only: held_serve.py uses it before importing vLLM).

A native server shares one Triton cache across the methods of a cache root, as the compose stack's and the Helm
chart's servers do (TRITON_CACHE_DIR on their cache volume). Unset, vLLM points Triton at a folder inside each
model configuration's torch.compile cache when it compiles, and at Triton's default (~/.triton/cache) when it only
loads that cache: so every method compiled its own JIT kernels on a fresh machine, and a machine's next sweep
compiled the first server's again (a lent H100, 2026-12-06: 13.6 s of the baseline's start cold, 14.8 s warm;
docs/measured.md). Triton's cache is keyed by each kernel's source, options and device, so sharing it changes no
kernel, only how often one is compiled."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path


def cache_root(env: Mapping[str, str] = os.environ) -> Path:
    """vLLM's envs.VLLM_CACHE_ROOT: $VLLM_CACHE_ROOT, else $XDG_CACHE_HOME/vllm, else ~/.cache/vllm."""
    root = env.get("VLLM_CACHE_ROOT") or os.path.join(env.get("XDG_CACHE_HOME") or "~/.cache", "vllm")
    return Path(os.path.expanduser(root))


def modelinfos(env: Mapping[str, str] = os.environ) -> Path:
    """vLLM's model-class cache (model_executor/models/registry.py), one file per class."""
    return cache_root(env) / "modelinfos"


def shared_kernel_cache(env: Mapping[str, str]) -> dict[str, str]:
    """What a native server's environment adds: the Triton cache in the cache root (compose.yaml's layout:
    /vllm-cache/triton), unless the user set one."""
    if env.get("TRITON_CACHE_DIR"):
        return {}
    return {"TRITON_CACHE_DIR": str(cache_root(env) / "triton")}
