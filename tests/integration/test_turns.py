"""`specstack sweep --methods baseline,ngram --dataset mt-bench --turns 2` on real vLLM (CPU, tiny models), once:
the baseline writes the turn-2 chats from its own greedy turn-1 answers, ngram is sent the very same bytes, the
file's sha256 is in the manifest, and turn 2 has its own acceptance window whose checks are all exact.
Bench is skipped: it stays on turn 1, untouched by --turns (CI time)."""

from __future__ import annotations

import json

import pytest
from rich.console import Console

from specstack.cli.main import main
from specstack.config.workloads import read_jsonl, sha256
from specstack.report import console_table
from tests.support import free_port

pytestmark = pytest.mark.integration

PROMPTS = 4
TURN2_INPUT = "inputs/mt-bench.turn2.baseline.jsonl"


@pytest.fixture(scope="module")
def turns_run(models_dir, tmp_path_factory):
    results, cache = tmp_path_factory.mktemp("turns-run"), tmp_path_factory.mktemp("turns-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SPECSTACK_DATASETS", str(cache))
        code = main(
            [
                "sweep",
                "--methods",
                "baseline,ngram",
                "--dataset",
                "mt-bench",
                "--turns",
                "2",
                "--model-set",
                "tiny",
                "--platform",
                "cpu-native",
                "--models-dir",
                str(models_dir),
                "--port",
                str(free_port()),
                "--results",
                str(results),
                "--run-id",
                "it-turns",
                "--num-prompts",
                str(PROMPTS),
                "--concurrency",
                "1",
                "--acceptance-max-tokens",
                "16",
                "--perf-output-len",
                "16",
                "--warmup-requests",
                "1",
                "--skip-bench",
            ]
        )
    run_dir = results / "it-turns"
    summaries = {m: json.loads((run_dir / m / "summary.json").read_text()) for m in ("baseline", "ngram")}
    assert code == 0 and all(s["status"] == "ok" for s in summaries.values()), {
        m: s["error"] for m, s in summaries.items()
    }
    return run_dir, summaries


def _records(run_dir, method: str, name: str) -> list[dict]:
    return [json.loads(line) for line in (run_dir / method / "acceptance" / name).read_text().splitlines()]


def test_turn_2_prompts_are_the_same_bytes_for_both_methods_and_hold_the_baselines_answer(turns_run):
    run_dir, _ = turns_run
    chats = {
        m: [
            json.dumps(r["request"]["messages"], ensure_ascii=False)
            for r in _records(run_dir, m, "mt-bench.turn2.jsonl")
        ]
        for m in ("baseline", "ngram")
    }
    assert len(chats["ngram"]) == PROMPTS and chats["ngram"] == chats["baseline"]
    written = [json.dumps(r["messages"], ensure_ascii=False) for r in read_jsonl_rows(run_dir / TURN2_INPUT)]
    assert chats["ngram"] == written
    answers = {
        r["id"]: r["response"]["choices"][0]["message"]["content"]
        for r in _records(run_dir, "baseline", "mt-bench.jsonl")
    }
    rows = {r["id"]: r for r in read_jsonl(run_dir / "inputs" / "mt-bench.acceptance.jsonl")}
    for record in _records(run_dir, "ngram", "mt-bench.turn2.jsonl"):
        first_id = record["id"].removesuffix("/turn2")
        user1, assistant, user2 = record["request"]["messages"]
        assert (user1["content"], assistant["content"], user2["content"]) == (
            rows[first_id]["prompt"],
            answers[first_id],
            rows[first_id]["turn2"],
        )
        assert assistant["role"] == "assistant" and answers[first_id]
        assert (record["turn"], record["category"], record["question_id"]) == (
            2,
            rows[first_id]["category"],
            rows[first_id]["question_id"],
        )


def read_jsonl_rows(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_the_manifest_holds_the_turn_2_files_sha256_and_the_recipe_its_turns(turns_run):
    run_dir, summaries = turns_run
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["inputs"][TURN2_INPUT] == sha256(run_dir / TURN2_INPUT)
    assert manifest["recipe"]["turns"] == 2
    for s in summaries.values():
        assert s["tasks"]["mt-bench"]["turns"]["2"]["sha256"] == sha256(run_dir / TURN2_INPUT)


def test_turn_2_acceptance_has_its_own_window_with_every_check_exact(turns_run):
    run_dir, summaries = turns_run
    ngram = summaries["ngram"]
    second = ngram["tasks"]["mt-bench"]["turns"]["2"]
    (window,) = [w for w in ngram["windows"] if w["name"] == "acceptance/mt-bench/turn2"]
    counters = window["from_counters"]
    assert (second["requests"], second["left_out"], window["status"]) == (PROMPTS, 0, "ok")
    assert second["num_spec_steps"] == counters["steps"] > 0
    assert second["num_accepted_draft_tokens"] == counters["accepted"]
    assert sum(c["num_draft_tokens"] or 0 for c in second["categories"].values()) == counters["draft_tokens"]
    assert len(second["categories"]) == PROMPTS
    assert window["checks"] and all(c["ok"] for c in window["checks"])
    assert len([c for c in window["checks"] if c["name"].startswith("Σ_category")]) == 4
    console = Console(record=True, width=200)
    console_table.print_run(run_dir, console)
    text = console.export_text().split("mt-bench per turn: ", 1)[1]
    assert "turn 1 (the task)" in text and "turn 2 (0 left out)" in text
    report = (run_dir / "report.md").read_text()
    assert "Acceptance per turn" in report
