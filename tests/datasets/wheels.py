"""Wheels built by the tests in the pinned layout: a zip holding the data file at the pinned inner path, and the
table entry that pins it (the real entry with this zip's sha256)."""

from __future__ import annotations

import dataclasses
import gzip
import json
import zipfile
from pathlib import Path

from specstack.config.workloads import sha256
from specstack.datasets.pinned import WHEELS, Wheel


def jsonl(rows: list[dict]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


MT_BENCH = [
    {"question_id": 81 + 3 * k + i, "category": cat, "turns": [f"{cat} question {i}", "now shorter"]}
    for k, cat in enumerate(("writing", "math", "coding"))
    for i in range(3)
]
HUMANEVAL = [
    {
        "task_id": f"HumanEval/{i}",
        "prompt": f'def f{i}(x):\n    """Return x + {i}."""\n',
        "entry_point": f"f{i}",
        "canonical_solution": f"    return x + {i}\n",
        "test": "",
    }
    for i in range(5)
]
SHAREGPT = [
    {
        "id": "a_0",
        "conversations": [
            {"from": "human", "value": "Explain speculative decoding briefly."},
            {"from": "gpt", "value": "It drafts tokens."},
        ],
    },
    {"id": "b_0", "conversations": [{"from": "human", "value": "hi"}]},  # too short
    {"id": "c_0", "conversations": [{"from": "gpt", "value": "An answer with no question."}]},
    {"id": "d_0", "conversations": []},
    {"id": "e_0", "conversations": [{"from": "human", "value": "x" * 2001}]},  # too long
    {"id": "f_0", "conversations": [{"from": "human", "value": "Why do caches make serving fast?"}]},
]


def data_file(name: str) -> bytes:
    if name == "mt-bench":
        return jsonl(MT_BENCH)
    if name == "humaneval":
        return gzip.compress(jsonl(HUMANEVAL))
    # as in the pinned wheel: the array cut off inside its last record
    return json.dumps(SHAREGPT, indent=2).encode()[:-1] + b',\n  {"id": "cut_0", "conversations": [{"from": "hum'


def build(cache: Path, name: str, member_bytes: bytes | None = None) -> Wheel:
    """The wheel `name` in `cache` in the pinned layout, and its table entry pinned to this zip's sha256."""
    real = WHEELS[name]
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / real.filename
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"{real.member.split('/')[0]}/__init__.py", "raise SystemExit('a dataset wheel must never run')\n")
        z.writestr(real.member, data_file(name) if member_bytes is None else member_bytes)
    return dataclasses.replace(real, sha256=sha256(path))
