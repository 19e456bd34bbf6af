"""Workloads: the two tasks (code, chat), their deterministic default prompts, and strict JSONL loading.

Each task has a perf file (fixed output length, read by `vllm bench serve --dataset-name custom`) and an
acceptance set (natural stops, sent by the collector to /v1/chat/completions). Both are plain JSONL so
users can bring their own; every file's sha256 goes into the manifest.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specstack.results import layout

TASKS = ("code", "chat")
DEFAULT_NUM_PROMPTS = 64
DEFAULT_PERF_OUTPUT_LEN = 128
DEFAULT_ACCEPTANCE_MAX_TOKENS = 256
# An acceptance row's optional fields carried to its request record (a dataset's category and own id), so
# figures can be read per category.
KEPT_FIELDS = ("category", "question_id", "turn")

# Copy-heavy: the answer is the input file with one factor changed.
_SOURCE = "\n\n".join(f"def scale_{i}(value):\n    return value * {i + 1}" for i in range(12))
# Open prose: almost nothing to copy from the prompt.
_TOPICS = (
    "why an inference service has to care about both throughput and latency",
    "the reasons a high cache hit rate can still leave users waiting",
    "how a team chooses a deployment that stays easy to maintain",
    "why an average metric can hide a few severe failures",
)


# Short edits of a short function: copy-heavy like `code`, but small enough for a 135M instruct model to follow (the
# trained set's demo and tests, docs/models.md); asked for with --tasks edit,chat.
EDIT_FUNCTIONS = ("greet", "welcome", "announce", "report", "notify", "remind", "thank", "cheer")
EDIT_WORDS = (
    ("Hello", "Goodbye"),
    ("Welcome", "Farewell"),
    ("Good morning", "Good night"),
    ("Hi", "Bye"),
    ("Congratulations", "Condolences"),
    ("Attention", "Reminder"),
    ("Thanks", "Sorry"),
    ("Hooray", "Oops"),
)
BUILT_IN = (*TASKS, "edit")


class WorkloadError(ValueError):
    """A workload file the collector cannot use; the message names the file and line."""


@dataclass(frozen=True)
class Task:
    name: str
    perf_path: Path
    acceptance_path: Path
    acceptance: list[dict[str, Any]] = field(repr=False)  # rows with id, prompt, max_tokens (and KEPT_FIELDS if given)

    def hashes(self) -> dict[str, str]:
        return {str(self.perf_path): sha256(self.perf_path), str(self.acceptance_path): sha256(self.acceptance_path)}


def default_prompt(task: str, i: int) -> str:
    if task == "code":
        return (
            f"Change only the factor of scale_{i % 12} to {100 + i}; keep every other function unchanged. "
            "Print the whole Python file, with no explanation and no code fences.\n" + _SOURCE
        )
    if task == "chat":
        return f"Case {i}: Write two full paragraphs on {_TOPICS[i % len(_TOPICS)]}."
    if task == "edit":
        name, (old, new) = (
            EDIT_FUNCTIONS[i % len(EDIT_FUNCTIONS)],
            EDIT_WORDS[(i + i // len(EDIT_WORDS)) % len(EDIT_WORDS)],
        )
        return (
            f"Here is a Python function:\n\ndef {name}(name):\n    print('{old}, ' + name)\n\n"
            f"Rewrite it so that it says '{new}' instead of '{old}'."
        )
    raise WorkloadError(
        f"unknown task {task!r}; the built-in tasks are {', '.join(BUILT_IN)} (a named dataset is "
        "asked for with --dataset NAME, your own files with --workload TASK=PERF,ACCEPTANCE)"
    )


def write_defaults(
    out_dir: Path,
    *,
    num_prompts: int = DEFAULT_NUM_PROMPTS,
    perf_output_len: int = DEFAULT_PERF_OUTPUT_LEN,
    acceptance_max_tokens: int = DEFAULT_ACCEPTANCE_MAX_TOKENS,
    tasks: tuple[str, ...] = TASKS,
) -> dict[str, Task]:
    """Write the built-in workloads (same prompts in both files of a task) and load them back."""
    out_dir.mkdir(parents=True, exist_ok=True)
    result = {}
    for task in tasks:
        prompts = [default_prompt(task, i) for i in range(num_prompts)]
        perf = out_dir / layout.perf_input(task)
        acc = out_dir / layout.acceptance_input(task)
        _write_jsonl(perf, [{"prompt": p, "output_tokens": perf_output_len} for p in prompts])
        _write_jsonl(
            acc,
            [
                {"id": f"{task}-{i:03d}", "prompt": p, "max_tokens": acceptance_max_tokens}
                for i, p in enumerate(prompts)
            ],
        )
        result[task] = load_task(task, perf, acc, default_max_tokens=acceptance_max_tokens)
    return result


def load_task(
    task: str, perf_path: Path, acceptance_path: Path, *, default_max_tokens: int = DEFAULT_ACCEPTANCE_MAX_TOKENS
) -> Task:
    perf_path, acceptance_path = Path(perf_path), Path(acceptance_path)
    if perf_path.suffix != ".jsonl":
        # vllm bench serve's custom dataset refuses any other suffix (datasets.py:2453).
        raise WorkloadError(f"{perf_path}: the perf file must end in .jsonl (vllm bench serve requires it)")
    read_jsonl(perf_path)  # validate now, not minutes later inside vllm bench serve
    rows = []
    for n, row in enumerate(read_jsonl(acceptance_path), start=1):
        max_tokens = row.get("max_tokens", default_max_tokens)
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens <= 0:
            raise WorkloadError(f"{acceptance_path}:{n}: max_tokens must be a positive integer, got {max_tokens!r}")
        turn2 = row.get("turn2")
        if turn2 is not None and (not isinstance(turn2, str) or not turn2.strip()):
            raise WorkloadError(
                f"{acceptance_path}:{n}: turn2 (the user's second turn) must be a non-empty "
                f"string, got {turn2!r}; drop it for a row with one turn"
            )
        rows.append(
            {
                "id": str(row.get("id", f"{task}-{n - 1:03d}")),
                "prompt": row["prompt"],
                "max_tokens": max_tokens,
                **{k: row[k] for k in KEPT_FIELDS if k in row},
                **({"turn2": turn2} if turn2 is not None else {}),
            }
        )
    return Task(task, perf_path, acceptance_path, rows)


def utf8_text(data: bytes, label: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise WorkloadError(f"{label}:{line}: not UTF-8 ({e.reason}); re-encode the file as UTF-8") from None


def jsonl_objects(data: bytes, label: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) of every non-blank line, strictly: UTF-8, valid JSON, an object (the user's files and
    the datasets' alike; `label` names the file in the message)."""
    for n, line in enumerate(utf8_text(data, label).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise WorkloadError(f"{label}:{n}: not valid JSON ({e.msg}); each line must be one JSON object") from None
        if not isinstance(obj, dict):
            raise WorkloadError(f"{label}:{n}: expected a JSON object, got {type(obj).__name__}")
        yield n, obj


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Read a JSONL workload strictly: every line an object with a non-empty string `prompt`."""
    path = Path(path)
    if not path.is_file():
        raise WorkloadError(f"{path}: workload file not found (write the defaults with `specstack workloads`)")
    rows = []
    for n, row in jsonl_objects(path.read_bytes(), str(path)):
        if not isinstance(row.get("prompt"), str) or not row["prompt"].strip():
            raise WorkloadError(f'{path}:{n}: missing a non-empty string field "prompt"')
        rows.append(row)
    if not rows:
        raise WorkloadError(f"{path}: the file has no prompts; add one JSON object per line")
    return rows


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
