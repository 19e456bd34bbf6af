"""collector/specstack/host/lifecycle.py: make sweep's and make reproduce's methods one by one (on
pipeline/serial.py's loop)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from specstack.host.lifecycle import one_by_one

pytestmark = pytest.mark.unit


def _stack(gpu_platform: bool, freed: list[bool]):
    said: list[tuple[str, bool]] = []
    stack = SimpleNamespace(
        s=SimpleNamespace(gpu_platform=gpu_platform, gpu="0"),
        sh=SimpleNamespace(say=lambda text, err=False: said.append((text, err))),
        gpu_free=lambda gpu: freed.pop(0),
    )
    return stack, said


def test_each_method_under_its_heading_and_the_failures_named():
    stack, said = _stack(False, [])
    steps = [(m, f"=== {m} ===", lambda m=m: 3 if m in ("b", "c") else 0) for m in ("a", "b", "c")]
    assert one_by_one(stack, steps) == " b c"
    assert said == [("=== a ===", False), ("=== b ===", False), ("=== c ===", False)]


def test_on_a_gpu_a_memory_not_released_drops_the_rest():
    stack, said = _stack(True, [True, False])
    ran = []
    steps = [(m, f"=== {m} ===", lambda m=m: ran.append(m) or (1 if m == "b" else 0)) for m in ("a", "b", "c")]
    assert one_by_one(stack, steps) == " b (stopped)"
    assert ran == ["a", "b"]
    assert said[-1] == ("sweep stopped: the GPU did not free up after b", True)
