"""Each dataset format parsed into rows of turn-1 prompts, on files in the sets' layouts written here."""

import gzip
import json

import pytest

from specstack.config.workloads import WorkloadError
from specstack.datasets import readers
from tests.datasets.wheels import HUMANEVAL, MT_BENCH, SHAREGPT, data_file, jsonl

pytestmark = pytest.mark.unit


def test_turns_keeps_the_first_turn_its_category_and_question_id():
    rows = readers.turns(jsonl(MT_BENCH), "q.jsonl")
    assert [r["prompt"] for r in rows] == [q["turns"][0] for q in MT_BENCH]
    assert [(r["question_id"], r["category"]) for r in rows] == [(q["question_id"], q["category"]) for q in MT_BENCH]


def test_speed_bench_messages_give_the_first_user_message():
    data = jsonl(
        [
            {
                "id": "s1",
                "category": "rag",
                "messages": [
                    {"role": "system", "content": "be brief"},
                    {"role": "user", "content": "Summarise the page."},
                ],
            },
            {"category": "math", "messages": [{"role": "user", "content": "2+2?"}]},
        ]
    )
    rows = readers.turns(data, "qualitative.jsonl")
    assert rows == [
        {"question_id": "s1", "category": "rag", "prompt": "Summarise the page."},
        {"question_id": 2, "category": "math", "prompt": "2+2?"},
    ]


@pytest.mark.parametrize(
    "line, message",
    [
        ({"question_id": 1, "category": "x"}, ':1: expected a non-empty list "turns"'),
        ({"question_id": 1, "turns": [""]}, ":1: the first turn is not a non-empty string"),
        ({"messages": [{"role": "assistant", "content": "no user"}]}, ":1: the first turn is not a non-empty string"),
    ],
)
def test_turns_refuses_rows_it_cannot_use_naming_file_and_line(line, message):
    with pytest.raises(WorkloadError, match=message):
        readers.turns(jsonl([line]), "mine.jsonl")
    with pytest.raises(WorkloadError, match="mine.jsonl:2: not valid JSON"):
        readers.turns(jsonl(MT_BENCH[:1]) + b"{oops\n", "mine.jsonl")
    with pytest.raises(WorkloadError, match="mine.jsonl: no usable prompts"):
        readers.turns(b"\n", "mine.jsonl")


def test_humaneval_prompt_is_the_function_stub():
    rows = readers.humaneval(data_file("humaneval"), "HumanEval.jsonl.gz")
    assert [r["prompt"] for r in rows] == [p["prompt"] for p in HUMANEVAL]
    assert rows[3]["question_id"] == "HumanEval/3" and {r["category"] for r in rows} == {None}
    with pytest.raises(WorkloadError, match="not a gzip file"):
        readers.humaneval(jsonl(HUMANEVAL), "HumanEval.jsonl.gz")
    with pytest.raises(WorkloadError, match=":1: expected the fields task_id and prompt"):
        readers.humaneval(gzip.compress(jsonl([{"prompt": "def f(): pass"}])), "HumanEval.jsonl.gz")


def test_sharegpt_keeps_in_bounds_first_human_turns_and_drops_the_cut_off_tail():
    rows = readers.sharegpt(data_file("sharegpt"), "sharegpt.json")
    assert [(r["question_id"], r["prompt"]) for r in rows] == [
        ("a_0", SHAREGPT[0]["conversations"][0]["value"]),
        ("f_0", SHAREGPT[5]["conversations"][0]["value"]),
    ]
    # a complete file reads the same
    assert readers.sharegpt(json.dumps(SHAREGPT).encode(), "sharegpt.json") == rows
    with pytest.raises(WorkloadError, match="expected a JSON array"):
        readers.sharegpt(b'{"id": 1}', "sharegpt.json")
