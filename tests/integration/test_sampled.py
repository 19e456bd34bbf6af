"""Sampling on real vLLM (CPU, tiny models): acceptance when sampling (--temperatures) and the losslessness test.

One run: the baseline sampled at temperatures 1.0 and 0.5, draft_model (a drafter with probabilities: the
rejection sampler's own arithmetic is exercised) at 1.0, each prompt 64 times with its own
seed (--samples-per-prompt). The sampled windows are bracketed and cross-checked like the greedy one; the
temperature really reaches the sampler; the losslessness test is calibrated (the baseline against itself), has power
(the baseline at 0.5 against itself at 1.0), and flags draft_model on vLLM 0.32.0 CPU, where the run records the engine
sampler probe's failed verdict and the report names it beside the method (docs/sampler-cpu-bug.md)."""

from __future__ import annotations

import json

import pytest

from specstack.report import lossless
from specstack.report.build import build
from specstack.results.bundle import SAMPLER_PROBE_FILE
from specstack.results.reader import load_run
from specstack.results.records import read_records
from specstack.runs.method_run import run_method

from .conftest import sweep_options

pytestmark = pytest.mark.integration

SAMPLES = 256  # 128 a side in the losslessness test (the baseline's even samples, the method's odd ones)
SMALL = dict(
    tasks=("code",),
    num_prompts=4,
    perf_output_len=32,
    acceptance_max_tokens=8,
    concurrencies=(1,),
    warmup_requests=1,
    skip_bench=True,
    samples_per_prompt=SAMPLES,
    acceptance_concurrency=4,
)


@pytest.fixture(scope="module")
def sampled_run(models_dir, tmp_path_factory):
    results = tmp_path_factory.mktemp("sampled")
    summaries = {}
    for method, temperatures in (("baseline", (1.0, 0.5)), ("draft_model", (1.0,))):
        opts = sweep_options(models_dir, results, "sampled", temperatures=temperatures, **SMALL)
        opts.method = method
        summary, path = run_method(opts)
        assert summary["status"] == "ok", summary["error"]
        summaries[method] = (summary, path)
    return results / "sampled", summaries


def test_a_sampled_window_is_crosschecked_like_the_greedy_one(sampled_run):
    _, summaries = sampled_run
    summary, path = summaries["draft_model"]
    window = next(w for w in summary["windows"] if w["name"] == "sampled/code/t1")
    assert window["status"] == "ok" and window["checks"] and all(c["ok"] for c in window["checks"]), window["checks"]
    figures = summary["tasks"]["code"]["sampled"]["1"]
    assert figures["num_accepted_draft_tokens"] == window["from_responses"]["accepted"]
    assert figures["num_draft_tokens"] == window["from_responses"]["draft_tokens"] > 0
    assert figures["num_accepted_draft_tokens"] > 0  # drafts were accepted: the test below means something
    assert json.loads((path / "summary.json").read_text())["tasks"]["code"]["sampled"]["1"] == figures


def test_every_sample_has_its_own_seed_and_the_answers_differ_from_greedy(sampled_run):
    _, summaries = sampled_run
    _, path = summaries["draft_model"]
    raw = [json.loads(line) for line in (path / "sampled" / "code-t1.jsonl").read_text().splitlines()]
    assert len(raw) == 4 * SAMPLES
    assert [(r["request"]["temperature"], r["request"]["seed"]) for r in raw] == [
        (1.0, 42 + i) for i in range(4 * SAMPLES)
    ]
    greedy = {r["id"]: r["text"] for r in read_records(path / "acceptance" / "code.jsonl")}
    sampled = read_records(path / "sampled" / "code-t1.jsonl")
    assert {r["id"].rsplit("/s", 1)[0] for r in sampled} == greedy.keys()
    assert all(r["token_ids"] for r in sampled)
    assert any(r["text"] != greedy[r["id"].rsplit("/s", 1)[0]] for r in sampled), "temperature 1 was not applied"


def split_samples(records: list[dict], side_a) -> tuple[dict, dict]:
    """The samples of each prompt split in two by their number k (`<prompt>/s<k>`): side_a(k) true on side A."""
    return (
        lossless.samples_by_prompt(records, lossless.POSITIONS, side_a),
        lossless.samples_by_prompt(records, lossless.POSITIONS, lambda k: not side_a(k)),
    )


def test_the_losslessness_test_is_calibrated_has_power_and_flags_draft_model_on_cpu(sampled_run):
    run_dir, _ = sampled_run
    base = load_run(run_dir).methods["baseline"]
    at = {t: lossless.sampled_records(base, "code", t) for t in (1.0, 0.5)}
    # calibration on real answers: the baseline against itself. Under no difference one split flags with
    # probability at most α (Holm over its 16 tests), so "never flags" cannot be asserted of one split without a
    # 1-in-20 false alarm (the even/odd split of one run here flagged once, raw p 0.0003, while its other 15 p-values
    # spread evenly). Three disjoint splits of the same samples are tested instead; more than one flag is what a
    # miscalibrated test shows.
    splits = {"even/odd": lambda k: k % 2 == 0, "halves": lambda k: k < SAMPLES // 2, "k mod 4": lambda k: k % 4 < 2}
    verdicts = {}
    for name, side_a in splits.items():
        same = lossless.compare_samples(*split_samples(at[1.0], side_a))
        assert len(same["tests"]) == 4 * lossless.POSITIONS, name
        verdicts[name] = same["verdict"] if same["flagged"] else None
    assert sum(v is not None for v in verdicts.values()) <= 1, verdicts
    # power: a deliberately different sampler (the baseline at temperature 0.5 against 1.0) is flagged
    other = lossless.compare_samples(*lossless.independent_samples(at[1.0], at[0.5]))
    assert other["flagged"] > 0 and other["verdict"].startswith("differs: prompt "), other["verdict"]
    # draft_model against its baseline, as the report shows it
    (row,) = build(run_dir, with_plots=False).lossless
    assert (row["method"], row["temperature"], row["samples_per_prompt"], row["tests"]) == (
        "draft_model",
        1.0,
        SAMPLES // 2,
        4 * lossless.POSITIONS,
    )
    tests = lossless.compare_samples(
        *lossless.independent_samples(
            at[1.0], lossless.sampled_records(load_run(run_dir).methods["draft_model"], "code", 1.0)
        )
    )["tests"]
    # position 0 is the target's own sample on both sides (nothing drafted yet): never different
    assert all(t["p_holm"] >= lossless.ALPHA for t in tests if t["position"] == 0)
    # A finding, kept visible: vLLM 0.32.0 on the CPU samples draft_model's later positions from another
    # distribution than plain decoding (docs/figures.md). If this fails, upstream changed: update the docs.
    assert row["flagged"] > 0 and row["verdict"].startswith("differs: prompt "), row
    # ... and the cause is named beside it: the engine sampler probe failed on this platform (docs/sampler-cpu-bug.md)
    assert row["engine_sampler"] == "biased" and row["verdict"].endswith(lossless.ENGINE_BIASED), row


def test_the_sampled_spec_run_records_the_engine_sampler_probe_for_its_platform(sampled_run):
    _, summaries = sampled_run
    summary, path = summaries["draft_model"]
    probe = summary["sampler_probe"]
    assert probe["where"].startswith("native") and probe["platform"]["device_type"] == "cpu"
    # vLLM 0.32.0 CPU: the known bug (tests/probes/test_sampler_probe.py); greedy shapes pass
    assert probe["verdict"] == "fail" and "expand_batch_to_tokens(temperature)" in probe["cause"], probe
    full = json.loads((path / SAMPLER_PROBE_FILE).read_text())
    assert full["verdict"] == "fail" and all(
        e["verdict"] == "pass" for e in full["shapes"] if e["shape"]["temperature"] == 0
    )
    assert "sampler_probe" not in summaries["baseline"][0]  # plain decoding has no rejection sampler
