"""Multi-turn acceptance (--turns 2): turn 2 of a two-turn task, sent as the chat [user: turn 1, assistant: A1,
user: turn 2] in a greedy window of its own, `acceptance/<task>/turn2` (checked like every request window).

A1 is the baseline's greedy answer to turn 1 (methods.toml's baseline of the method; a baseline answers for
itself), so every method compared with that baseline is sent byte-identical turn-2 chats. With its own A1 each
method would be measured on other text wherever its greedy output drifts from the baseline's (float order,
batch shapes), and the turn-2 figures would no longer compare methods on the same prompts.

The baseline writes the chats into the run's inputs (`inputs/<task>.turn2.<baseline>.jsonl`, atomically, its
sha256 in the manifest's inputs) right after its turn-1 window; a method reads that file and checks the sha256
before its server starts. The first baseline run writes the file; a later one (--force, another session, a
reproduction's copy of the inputs) reuses it, so the methods measured against it stay comparable.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from specstack.config.workloads import Task, sha256
from specstack.errors import UserError
from specstack.measure import chat
from specstack.measure.windows import Window
from specstack.results import layout
from specstack.results.bundle import update_manifest
from specstack.results.files import atomic_write_text
from specstack.results.records import read_records

if TYPE_CHECKING:
    from specstack.config.methods import ServePlan

PHASE = "turn2"
KEPT = ("category", "question_id")
console = Console(stderr=True)


def chats(task: Task, answers: dict[str, str]) -> tuple[list[dict], int]:
    """(turn-2 rows, how many rows have no second turn and are left out). `answers`: turn-1 row id -> the
    baseline's answer. A turn-2 row keeps its row's category and question_id and carries `turn: 2`."""
    rows, left_out = [], 0
    for row in task.acceptance:
        if not row.get("turn2"):
            left_out += 1
            continue
        answer = answers.get(row["id"])
        if not isinstance(answer, str):
            raise UserError(
                f"turn 2 of {task.name}: the baseline has no answer to {row['id']} in its turn-1 "
                "records; rerun the baseline (--force) so every row of turn 1 is answered"
            )
        rows.append(
            {
                "id": f"{row['id']}/turn2",
                "max_tokens": row["max_tokens"],
                "messages": [
                    {"role": "user", "content": row["prompt"]},
                    {"role": "assistant", "content": answer},
                    {"role": "user", "content": row["turn2"]},
                ],
                **{k: row[k] for k in KEPT if k in row},
                "turn": 2,
            }
        )
    return rows, left_out


def answers_of(records_path: Path) -> dict[str, str]:
    """Turn-1 row id -> the answer text, from a method's acceptance records (failed requests left out)."""
    return {r["id"]: r["text"] for r in read_records(records_path) if not r["error"]}


def kept_inputs(run_dir: Path) -> dict[str, str]:
    """The turn-2 files the manifest already records: a later method's inputs keep them beside its own."""
    return {rel: h for rel, h in _manifest_inputs(run_dir).items() if layout.TURN2_MARK in rel}


def _manifest_inputs(run_dir: Path) -> dict[str, str]:
    path = Path(run_dir) / layout.MANIFEST
    return (json.loads(path.read_text()).get("inputs") or {}) if path.exists() else {}


class TurnTwo:
    """The turn-2 windows of one method run: which tasks have them, and where their chats come from."""

    def __init__(self, turns: int, plan: ServePlan, run_dir: Path, tasks: dict[str, Task]):
        self.run_dir, self.baseline = Path(run_dir), plan.baseline or plan.method
        self.own = plan.baseline is None  # a baseline replays its own answers
        self.tasks = {n: t for n, t in tasks.items() if turns > 1 and any(r.get("turn2") for r in t.acceptance)}
        self.inputs: dict[str, dict] = {}  # task -> the file, its sha256, requests and rows left out

    def check_ready(self) -> None:
        """A method's turn-2 files must be there before its server starts: a missing one is a user error."""
        if not self.own:
            for name in self.tasks:
                self._read(name)

    def measure(self, run, name: str) -> None:
        """The turn-2 window of task `name`, right after its turn-1 window (`run`: the MethodRun)."""
        task = self.tasks.get(name)
        if task is None:
            return
        if self.own and run.windows.records[-1].status != "ok":
            console.print(f"  turn 2 of {name} skipped: the turn-1 window failed, its answers are incomplete")
            return
        rows = self._rows(name, task, run.bundle.staging / layout.acceptance_records(name))
        left_out = len(task.acceptance) - len(rows)
        self.inputs[name] = {**self.inputs[name], "requests": len(rows), "left_out": left_out}
        run.summary = run.summary.updated(turn2_inputs=dict(self.inputs))
        console.print(
            f"  acceptance phase: {name} turn 2 ({len(rows)} requests; {left_out} rows without a second "
            f"turn left out; turn 1 answered by {self.baseline})"
        )
        opts = run.opts
        run.windows.run(
            Window(layout.turn2_window(name), PHASE, task=name),
            total=len(rows),
            body=lambda: chat.run_requests(
                run.server,
                rows,
                run.bundle.path(layout.turn2_records(name)),
                concurrency=opts.acceptance_concurrency,
                timeout=opts.request_timeout,
                speculative=run.speculative,
            ),
        )

    def _path(self, name: str) -> tuple[Path, str]:
        rel = f"{layout.INPUTS_DIR}/{layout.turn2_input(name, self.baseline)}"
        return self.run_dir / rel, rel

    def _rows(self, name: str, task: Task, turn1_records: Path) -> list[dict]:
        path, rel = self._path(name)
        if not self.own or path.exists():
            return self._read(name)
        rows, _ = chats(task, answers_of(turn1_records))
        atomic_write_text(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
        digest = sha256(path)
        update_manifest(self.run_dir, inputs={**_manifest_inputs(self.run_dir), rel: digest})
        self.inputs[name] = {"file": rel, "sha256": digest, "answers_from": self.baseline}
        return rows

    def _read(self, name: str) -> list[dict]:
        """The turn-2 chats the baseline wrote, sha256-checked against the manifest."""
        path, rel = self._path(name)
        if not path.exists():
            raise UserError(
                f"--turns 2: {rel} is missing: turn 2 of {name} replays the greedy turn-1 answers of "
                f"the baseline {self.baseline!r}, which writes that file when it runs with --turns 2. "
                f"Run {self.baseline} first in the same run id (specstack run --method {self.baseline} "
                "--turns 2 --run-id ID, same options), or use specstack sweep, which runs baselines first"
            )
        digest, recorded = sha256(path), _manifest_inputs(self.run_dir).get(rel)
        if recorded is None and self.own:  # a reproduction's copy, or a write the manifest missed: adopt it
            update_manifest(self.run_dir, inputs={**_manifest_inputs(self.run_dir), rel: digest})
        elif recorded is None:
            raise UserError(
                f"{rel} is not among the run's recorded inputs (manifest.json): {self.baseline} did "
                f"not write it in this run; rerun {self.baseline} with --force in this run id, or "
                "measure in a new --run-id"
            )
        elif recorded != digest:
            raise UserError(
                f"{rel} has sha256 {digest[:12]}…, not the "
                f"{recorded[:12]}… the manifest holds: the turn-2 chats changed "
                f"after {self.baseline} wrote them; restore the file, or measure in a new --run-id"
            )
        self.inputs[name] = {"file": rel, "sha256": digest, "answers_from": self.baseline}
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
