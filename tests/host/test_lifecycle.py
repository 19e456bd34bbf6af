"""collector/specstack/host/lifecycle.py: the stop rule make sweep and make reproduce give pipeline/serial.py's
loop (on a GPU, a memory not released drops the rest)."""

from __future__ import annotations

import functools
from types import SimpleNamespace

import pytest

from specstack.host import lifecycle
from specstack.pipeline.serial import one_by_one

pytestmark = pytest.mark.unit


def _stack(gpu_platform: bool, freed: list[bool]):
    said: list[tuple[str, bool]] = []
    stack = SimpleNamespace(
        s=SimpleNamespace(gpu_platform=gpu_platform, gpu="0"),
        sh=SimpleNamespace(say=lambda text, err=False: said.append((text, err))),
        gpu_free=lambda gpu: freed.pop(0),
    )
    return stack, said


def _steps(ran: list[str]):
    return [(m, f"=== {m} ===", lambda m=m: ran.append(m) or (1 if m == "b" else 0)) for m in ("a", "b", "c")]


def test_on_a_gpu_a_memory_not_released_drops_the_rest():
    stack, said = _stack(True, [True, False])
    ran: list[str] = []
    stop = functools.partial(lifecycle._gpu_held, stack)
    assert one_by_one(_steps(ran), say=stack.sh.say, stop=stop) == " b (stopped)"
    assert ran == ["a", "b"]
    assert said == [
        ("=== a ===", False),
        ("=== b ===", False),
        ("sweep stopped: the GPU did not free up after b", True),
    ]


def test_on_the_cpu_platform_no_gpu_is_waited_for():
    stack, said = _stack(False, [])  # gpu_free would fail: never asked
    ran: list[str] = []
    assert one_by_one(_steps(ran), say=stack.sh.say, stop=functools.partial(lifecycle._gpu_held, stack)) == " b"
    assert ran == ["a", "b", "c"] and not [text for text, err in said if err]
