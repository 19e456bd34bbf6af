"""collector/specstack/pipeline/serial.py: the serial loop of both front doors (specstack sweep's run_all; make
sweep's and make reproduce's one_by_one)."""

from __future__ import annotations

import pytest

from specstack.pipeline.serial import Serial, one_by_one, serially

pytestmark = pytest.mark.unit


def test_each_item_in_order_one_at_a_time_with_its_index():
    seen = []
    assert serially(["a", "b", "c"], lambda i, x: seen.append((i, x)) or x.upper()) == Serial(["A", "B", "C"])
    assert seen == [(0, "a"), (1, "b"), (2, "c")]


def test_a_finished_item_is_kept_not_run_and_asked_just_before_its_turn():
    ran, asked = [], []

    def finished(x):
        asked.append((x, list(ran)))
        return "kept" if x == "b" else None

    out = serially(["a", "b", "c"], lambda i, x: ran.append((i, x)) or x, finished=finished)
    assert out == Serial(["a", "kept", "c"]) and ran == [(0, "a"), (2, "c")]
    assert asked == [("a", []), ("b", [(0, "a")]), ("c", [(0, "a")])]  # after the item before it ran


def test_stop_ends_the_loop_after_an_item_run_and_is_told_the_rest():
    told = []

    def stop(x, result, rest):
        told.append((x, result, list(rest)))
        return x == "b"

    out = serially(["a", "b", "c"], lambda i, x: i, finished=lambda x: -1 if x == "a" else None, stop=stop)
    assert out == Serial([-1, 1], stopped=True)
    assert told == [("b", 1, ["c"])]  # never asked after a kept item


def test_a_stop_that_raises_ends_the_loop_with_its_error():
    def stop(x, result, rest):
        raise ValueError(f"stopped at {x}, not run: {rest}")

    with pytest.raises(ValueError, match=r"stopped at a, not run: \['b'\]"):
        serially(["a", "b"], lambda i, x: x, stop=stop)


def test_one_by_one_says_each_heading_and_names_the_failures():
    said: list[str] = []
    steps = [(m, f"=== {m} ===", lambda m=m: 3 if m in ("b", "c") else 0) for m in ("a", "b", "c")]
    assert one_by_one(steps, say=said.append) == " b c"
    assert said == ["=== a ===", "=== b ===", "=== c ==="]


def test_one_by_one_stopped_keeps_the_failures_then_says_stopped():
    ran: list[str] = []
    steps = [(m, m, lambda m=m: ran.append(m) or (1 if m == "b" else 0)) for m in ("a", "b", "c")]
    assert one_by_one(steps, say=lambda text: None, stop=lambda m: m == "b") == " b (stopped)"
    assert ran == ["a", "b"]
    assert one_by_one(steps[:1], say=lambda text: None, stop=lambda m: True) == " (stopped)"
