"""collector/specstack/host/lifecycle.py: the stop rule make sweep and make reproduce give pipeline/serial.py's
loop (on a GPU, a memory not released drops the rest), and an interrupted make reproduce ends as make down."""

from __future__ import annotations

import functools
import signal
from pathlib import Path
from types import SimpleNamespace

import pytest

from specstack import interrupts
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


def test_an_interrupted_reproduce_takes_the_stack_down_like_make_run_and_sweep(monkeypatch):
    said: list[tuple[str, bool]] = []
    downs: list[bool] = []
    stack = SimpleNamespace(
        s=SimpleNamespace(docker="docker"),
        sh=SimpleNamespace(say=lambda text, err=False: said.append((text, err))),
        prepare=lambda: 0,
        check=lambda method: 0,
        stack_up=lambda: 0,
        models=lambda: 0,
        down=lambda quiet=False: downs.append(quiet) or 0,
    )
    planned = SimpleNamespace(
        platform="cpu", model_set="tiny", prefix_caching=False, original="r1", methods=[("baseline", None)]
    )

    def interrupted_loop(*_a, **_k):
        raise interrupts.Interrupted(signal.SIGTERM)

    monkeypatch.setattr(lifecycle, "plan_reproduction", lambda *a, **k: (planned, Path("images.lock")))
    monkeypatch.setattr(lifecycle, "replace", lambda s, **_k: s)
    monkeypatch.setattr(lifecycle, "Stack", lambda s, sh: stack)
    monkeypatch.setattr(lifecycle, "read_lock", lambda lock: {})
    monkeypatch.setattr(lifecycle, "_lock_run", lambda stack, run_id: True)
    monkeypatch.setattr(lifecycle, "one_by_one", interrupted_loop)
    monkeypatch.setattr(lifecycle.run_lock, "release", lambda path: None)
    rc = lifecycle.reproduce(
        stack, run=Path("results/r1"), run_id="r2", methods=None, allow_drift=False, speed_tolerance=""
    )
    assert rc == 128 + signal.SIGTERM
    assert downs == [True], "an interrupted make reproduce must stop and remove the stack, as make run and sweep do"
    assert ("interrupted (SIGTERM): every container of the stack stopped and removed (make down)", True) in said
