"""Multi-turn (--turns 2) on constructed data: turn-2 rows built from the baseline's answers, rows without a second
turn left out, the file the baseline writes (atomically, sha256 in the manifest) and a method reads back, the
errors naming the fix, and the pieces around it (readers, task files, options, payload, summary, sweep order)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from specstack.config.workloads import Task, WorkloadError, load_task, sha256
from specstack.datasets import readers
from specstack.datasets.tasks import parse_spec, write_task
from specstack.errors import UserError
from specstack.measure.chat import chat_payload
from specstack.pipeline import sweep
from specstack.results.bundle import update_manifest
from specstack.results.summary import Summary
from specstack.runs import turns
from specstack.runs.method_summary import _turns
from specstack.runs.options import Options, load_tasks
from tests.datasets.wheels import MT_BENCH, jsonl
from tests.support import serve_plan

pytestmark = pytest.mark.unit

BASELINE_PLAN = serve_plan(method="baseline", baseline=None)
NGRAM_PLAN = serve_plan(method="ngram", baseline="baseline")


def _task() -> Task:
    rows = [
        {
            "id": "mt-000",
            "prompt": "Write a poem.",
            "max_tokens": 16,
            "category": "writing",
            "question_id": 81,
            "turn2": "Now shorter.",
        },
        {"id": "mt-001", "prompt": "2+2?", "max_tokens": 16, "category": "math", "question_id": 7},
        {
            "id": "mt-002",
            "prompt": "Sort a list.",
            "max_tokens": 8,
            "category": "coding",
            "question_id": 9,
            "turn2": "In Rust.",
        },
    ]
    return Task("mt", None, None, rows)


def _answer_records(path, answers: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "".join(
            json.dumps({"id": i, "response": {"choices": [{"message": {"content": text}}]}}) + "\n"
            for i, text in answers.items()
        )
    )


def test_turn_2_rows_are_the_chat_of_turn_1_the_answer_and_turn_2_and_rows_without_one_are_left_out():
    rows, left_out = turns.chats(_task(), {"mt-000": "Roses are red.", "mt-001": "4", "mt-002": "sorted(x)"})
    assert left_out == 1
    assert rows[0] == {
        "id": "mt-000/turn2",
        "max_tokens": 16,
        "category": "writing",
        "question_id": 81,
        "turn": 2,
        "messages": [
            {"role": "user", "content": "Write a poem."},
            {"role": "assistant", "content": "Roses are red."},
            {"role": "user", "content": "Now shorter."},
        ],
    }
    assert [r["id"] for r in rows] == ["mt-000/turn2", "mt-002/turn2"] and rows[1]["max_tokens"] == 8
    with pytest.raises(UserError, match="no answer to mt-002 in its turn-1 records; rerun the baseline"):
        turns.chats(_task(), {"mt-000": "Roses are red."})


def _run(tmp_path, plan, task, staging_answers=None):
    """What TurnTwo.measure needs of a MethodRun, with the window machinery replaced by a recorder."""
    sent = []
    staging = tmp_path / f"staging-{plan.method}"
    if staging_answers is not None:
        _answer_records(staging / "acceptance" / f"{task.name}.jsonl", staging_answers)
    windows = SimpleNamespace(
        records=[SimpleNamespace(status="ok")], run=lambda window, body, total: sent.append((window, total))
    )
    run = SimpleNamespace(
        windows=windows,
        bundle=SimpleNamespace(staging=staging),
        summary=Summary.make(),
        server=None,
        opts=Options(method=plan.method, run_id="r"),
        speculative=True,
    )
    return run, sent


def test_the_baseline_writes_the_file_and_records_its_sha256_and_a_method_reads_the_same_bytes(tmp_path):
    task = _task()
    base = turns.TurnTwo(2, BASELINE_PLAN, tmp_path, {"mt": task})
    run, sent = _run(tmp_path, BASELINE_PLAN, task, {"mt-000": "Roses.", "mt-001": "4", "mt-002": "sorted(x)"})
    base.check_ready()  # a baseline answers for itself: nothing to read before its server
    base.measure(run, "mt")
    path = tmp_path / "inputs" / "mt.turn2.baseline.jsonl"
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["inputs"]["inputs/mt.turn2.baseline.jsonl"] == sha256(path)
    assert [(w.name, w.phase, w.task, total) for w, total in sent] == [("acceptance/mt/turn2", "turn2", "mt", 2)]
    assert run.summary.to_json()["turn2_inputs"]["mt"] == {
        "file": "inputs/mt.turn2.baseline.jsonl",
        "sha256": sha256(path),
        "answers_from": "baseline",
        "requests": 2,
        "left_out": 1,
    }
    assert turns.kept_inputs(tmp_path) == {"inputs/mt.turn2.baseline.jsonl": sha256(path)}
    method = turns.TurnTwo(2, NGRAM_PLAN, tmp_path, {"mt": task})
    method.check_ready()
    rows = method._read("mt")
    assert path.read_text() == "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    assert rows[0]["messages"][1]["content"] == "Roses."  # the baseline's answer, not the method's
    before = path.read_bytes()
    again, _ = _run(tmp_path, BASELINE_PLAN, task, {"mt-000": "Other.", "mt-001": "4", "mt-002": "x"})
    turns.TurnTwo(2, BASELINE_PLAN, tmp_path, {"mt": task}).measure(again, "mt")
    assert path.read_bytes() == before  # a rerun of the baseline keeps the file the methods were measured on


def test_a_method_before_its_baseline_fails_naming_the_fix(tmp_path):
    method = turns.TurnTwo(2, NGRAM_PLAN, tmp_path, {"mt": _task()})
    with pytest.raises(
        UserError,
        match=r"inputs/mt.turn2.baseline.jsonl is missing: .* Run baseline first in the "
        r"same run id .* or use specstack sweep, which runs baselines first",
    ):
        method.check_ready()


def test_a_changed_or_unrecorded_file_is_refused(tmp_path):
    (tmp_path / "inputs").mkdir()
    path = tmp_path / "inputs" / "mt.turn2.baseline.jsonl"
    path.write_text('{"id": "mt-000/turn2"}\n')
    method = turns.TurnTwo(2, NGRAM_PLAN, tmp_path, {"mt": _task()})
    with pytest.raises(UserError, match="is not among the run's recorded inputs .* rerun baseline with --force"):
        method.check_ready()
    update_manifest(tmp_path, inputs={"inputs/mt.turn2.baseline.jsonl": "0" * 64})
    with pytest.raises(
        UserError,
        match="has sha256 .*, not the 000000000000… the manifest holds: the turn-2 chats "
        "changed .* restore the file, or measure in a new --run-id",
    ):
        method.check_ready()
    base = turns.TurnTwo(2, BASELINE_PLAN, tmp_path, {"mt": _task()})
    update_manifest(tmp_path, inputs={})
    assert base._read("mt") == [{"id": "mt-000/turn2"}]  # a reproduction's copy: the baseline adopts it
    assert turns.kept_inputs(tmp_path) == {"inputs/mt.turn2.baseline.jsonl": sha256(path)}


def test_only_two_turn_tasks_get_a_turn_2_and_only_with_turns_2(tmp_path):
    plain = Task("code", None, None, [{"id": "c", "prompt": "p", "max_tokens": 4}])
    assert list(turns.TurnTwo(2, NGRAM_PLAN, tmp_path, {"mt": _task(), "code": plain}).tasks) == ["mt"]
    assert turns.TurnTwo(1, NGRAM_PLAN, tmp_path, {"mt": _task()}).tasks == {}


def test_readers_and_task_files_carry_the_second_turn_only_when_asked(tmp_path):
    data = jsonl(MT_BENCH[:2] + [{"question_id": 1, "category": "qa", "turns": ["one turn only"]}])
    rows = readers.turns(data, "q.jsonl")
    assert [r.get("turn2") for r in rows] == ["now shorter", "now shorter", None]
    question = tmp_path / "q.jsonl"
    question.write_bytes(data)
    spec = parse_spec(f"spec-bench={question}")
    _, one = write_task(tmp_path / "t1", spec, num_prompts=3, perf_output_len=8, acceptance_max_tokens=8)
    assert "turn2" not in one.read_text()  # a turn-1 run's inputs are what they were
    perf, two = write_task(tmp_path / "t2", spec, num_prompts=3, perf_output_len=8, acceptance_max_tokens=8, turns=2)
    task = load_task("spec-bench", perf, two)
    assert [r.get("turn2") for r in task.acceptance] == ["now shorter", None, "now shorter"]  # round-robin
    record = json.loads((tmp_path / "t2" / "spec-bench.dataset.json").read_text())
    assert (record["turns"], record["rows_with_turn2"]) == (2, 2)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "a", "turn2": ""}\n')
    with pytest.raises(WorkloadError, match="bad.jsonl:1: turn2 .* must be a non-empty string"):
        load_task("x", bad, bad)


def test_turns_options_that_cannot_work_are_refused(tmp_path):
    with pytest.raises(UserError, match="--turns must be 1 or 2"):
        Options(method="ngram", run_id="r", turns=3).validate()
    opts = Options(method="ngram", run_id="r", results_dir=tmp_path, tasks=("code",), num_prompts=2, turns=2)
    with pytest.raises(
        UserError,
        match=r"--turns 2: no task of the run has a second turn \(code\); add a two-turn "
        r"set \(--dataset mt-bench",
    ):
        load_tasks(opts, tmp_path / "inputs")


def test_a_turn_2_payload_sends_the_chat_with_the_greedy_rules():
    chat = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"}]
    payload = chat_payload("m", None, 8, messages=chat)
    assert payload["messages"] == chat and payload["messages"] is chat
    assert (payload["temperature"], payload["n"], payload["return_token_ids"], "stop" in payload) == (
        0.0,
        1,
        True,
        False,
    )
    assert chat_payload("m", "p", 8)["messages"] == [{"role": "user", "content": "p"}]


def test_the_summary_keeps_turn_2_with_its_categories_and_its_inputs(tmp_path):
    window = {
        "name": "acceptance/mt/turn2",
        "phase": "turn2",
        "task": "mt",
        "status": "ok",
        "from_responses": {
            "acceptance_rate": 0.5,
            "mean_acceptance_length": 2.0,
            "histogram": [1, 1],
            "steps": 2,
            "draft_tokens": 4,
            "accepted": 2,
        },
        "by_category": {
            "writing": {"requests": 1, "acceptance_rate": 0.5, "steps": 2, "draft_tokens": 4, "accepted": 2}
        },
    }
    staging = tmp_path / "staging"
    _answer_records(staging / "acceptance" / "mt.turn2.jsonl", {"mt-000/turn2": "Short."})
    inputs = {"mt": {"file": "inputs/mt.turn2.baseline.jsonl", "sha256": "ab", "requests": 1, "left_out": 1}}
    out = _turns([window], "mt", inputs, SimpleNamespace(staging=staging))
    second = out["2"]
    assert (second.turn, second.status, second.requests, second.left_out, second.sha256) == (2, "ok", 1, 1, "ab")
    assert (second.acceptance_rate, second.num_accepted_draft_tokens) == (0.5, 2)
    assert second.category_figures["writing"].num_draft_tokens == 4
    assert _turns([], "mt", inputs, SimpleNamespace(staging=staging)) == {}


def test_a_sweep_with_turns_2_runs_the_baselines_first(monkeypatch, tmp_path):
    planned = []
    monkeypatch.setattr(sweep, "run_all", lambda opts, entries, report=True: planned.extend(entries) or [])
    sweep.sweep(Options(method="baseline", run_id="x", results_dir=tmp_path, turns=2), ["ngram", "baseline"])
    assert [name for name, _ in planned] == ["baseline", "ngram"]


def test_a_baseline_whose_turn_1_window_failed_writes_no_turn_2(tmp_path):
    task = _task()
    run, sent = _run(tmp_path, BASELINE_PLAN, task, {"mt-000": "Roses."})
    run.windows.records[-1].status = "failed"
    turns.TurnTwo(2, BASELINE_PLAN, tmp_path, {"mt": task}).measure(run, "mt")
    assert sent == [] and not (tmp_path / "inputs").exists() and "turn2_inputs" not in run.summary.to_json()


def test_the_recipe_records_turns_so_reproduce_replays_them(tmp_path):
    from specstack.runs import recipe

    recorded = recipe.record(Options(method="ngram", run_id="r", turns=2), tmp_path)
    assert recorded["turns"] == 2
    assert recipe.options(recorded, run_id="again", results_dir=tmp_path, run_dir=tmp_path).turns == 2
