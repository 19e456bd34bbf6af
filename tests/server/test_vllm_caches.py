"""Where vLLM 0.32.0 keeps a start's caches (server/vllm_caches.py), from the variables vLLM reads; and the Triton
cache a native server shares across methods, as the compose stack's servers do."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from specstack.server import vllm_caches

pytestmark = pytest.mark.unit


def test_the_cache_root_is_vllms():
    assert vllm_caches.cache_root({"VLLM_CACHE_ROOT": "/x/root", "XDG_CACHE_HOME": "/y"}) == Path("/x/root")
    assert vllm_caches.cache_root({"XDG_CACHE_HOME": "/y"}) == Path("/y/vllm")
    assert vllm_caches.cache_root({}) == Path.home() / ".cache" / "vllm"
    assert vllm_caches.modelinfos({"VLLM_CACHE_ROOT": "~/c"}) == Path.home() / "c" / "modelinfos"


def test_one_triton_cache_in_the_root_unless_the_user_set_one():
    assert vllm_caches.shared_kernel_cache({"VLLM_CACHE_ROOT": "/r"}) == {"TRITON_CACHE_DIR": "/r/triton"}
    assert vllm_caches.shared_kernel_cache({"VLLM_CACHE_ROOT": "/r", "TRITON_CACHE_DIR": "/mine"}) == {}


def test_the_layout_is_the_compose_stacks():
    """compose.yaml's servers keep the Triton cache on their cache volume: a native server, in its root, alike."""
    env = yaml.safe_load((Path(__file__).parents[2] / "compose.yaml").read_text())["x-vllm"]["environment"]
    assert vllm_caches.shared_kernel_cache({"VLLM_CACHE_ROOT": env["VLLM_CACHE_ROOT"]}) == {
        "TRITON_CACHE_DIR": env["TRITON_CACHE_DIR"]
    }
