"""runs/sampler_probe.py: which runs record the engine sampler probe's verdict, and what they keep (the probe
itself is tests/probes/; here its report is constructed so that the rules are checked in milliseconds)."""

import json

import pytest

from specstack.results.bundle import SAMPLER_PROBE_FILE, MethodBundle
from specstack.results.summary import Summary
from specstack.runs import sampler_probe

pytestmark = pytest.mark.unit

REPORT = {
    "schema": "specstack.sampler-probe/1",
    "verdict": "fail",
    "failing_shapes": ["t1.0-k1"],
    "cause": "the expanded per-token sampling parameters differ from the request's: ...",
    "platform": {"vllm": "0.32.0", "device": "cpu", "device_type": "cpu", "triton_kernels": False},
    "statistics": {"min_power": 0.93, "family_alpha": 1e-3},
    "shapes": [],
}


@pytest.fixture
def probe_calls(monkeypatch):
    calls = []

    def fake_run_probe():
        calls.append(1)
        return REPORT

    monkeypatch.setattr("specstack.probes.sampler.run_probe", fake_run_probe)
    monkeypatch.setattr(sampler_probe, "_cached", None)
    return calls


def _bundle(tmp_path, name="draft_model"):
    return MethodBundle(tmp_path, "r1", name)


def _record(summary: dict, bundle, **kw) -> dict:
    """The summary's JSON after sampler_probe.record (which takes and returns the typed record)."""
    return sampler_probe.record(Summary.of(summary), bundle, **kw).to_json()


def test_a_native_sampled_spec_run_records_the_verdict_and_the_full_report(tmp_path, probe_calls):
    summary, bundle = {}, _bundle(tmp_path)
    summary = _record(summary, bundle, temperatures=(1.0,), runtime="native", speculative=True)
    probe = summary["sampler_probe"]
    assert probe["verdict"] == "fail" and probe["failing_shapes"] == ["t1.0-k1"] and probe["file"] == SAMPLER_PROBE_FILE
    assert probe["platform"]["device"] == "cpu" and probe["where"].startswith("native")
    assert json.loads((bundle.staging / SAMPLER_PROBE_FILE).read_text()) == REPORT


def test_the_probe_runs_once_per_process(tmp_path, probe_calls):
    for name in ("draft_model", "eagle3"):
        _record({}, _bundle(tmp_path, name), temperatures=(1.0,), runtime="native", speculative=True)
    assert len(probe_calls) == 1


@pytest.mark.parametrize("temperatures, speculative", [((), True), ((1.0,), False)])
def test_greedy_runs_and_plain_decoding_record_nothing(tmp_path, probe_calls, temperatures, speculative):
    summary, bundle = {}, _bundle(tmp_path)
    summary = _record(summary, bundle, temperatures=temperatures, runtime="native", speculative=speculative)
    assert "sampler_probe" not in summary and not probe_calls
    assert not (bundle.staging / SAMPLER_PROBE_FILE).exists()


def test_an_attached_server_is_not_probed_here_and_the_summary_says_how(tmp_path, probe_calls):
    summary = {}
    summary = _record(summary, _bundle(tmp_path), temperatures=(1.0,), runtime="url", speculative=True)
    assert summary["sampler_probe"]["verdict"] == "not run" and not probe_calls
    assert "python3 -m specstack.cli.probe_sampler" in summary["sampler_probe"]["reason"]


def test_a_probe_that_cannot_run_is_recorded_and_the_run_goes_on(tmp_path, monkeypatch):
    def broken():
        raise ImportError("no module named vllm")

    monkeypatch.setattr("specstack.probes.sampler.run_probe", broken)
    monkeypatch.setattr(sampler_probe, "_cached", None)
    summary = {}
    summary = _record(summary, _bundle(tmp_path), temperatures=(1.0,), runtime="native", speculative=True)
    assert summary["sampler_probe"]["verdict"] == "error" and "vllm" in summary["sampler_probe"]["error"]


def test_a_model_runner_v2_server_is_not_labelled_by_the_v1_probe(tmp_path, probe_calls):
    """On CUDA, V2 serves spec methods with its own rejection sampler: a V1 probe's pass would vouch for a
    module the server did not run (seen on the H200 run of 2026-12-02: eagle3 on V2 labelled 'exact')."""
    summary = {"server": {"model_runner": "V2"}}
    summary = _record(summary, _bundle(tmp_path), temperatures=(1.0,), runtime="native", speculative=True)
    assert summary["sampler_probe"]["verdict"] == "not run" and not probe_calls
    assert "Model Runner V2" in summary["sampler_probe"]["reason"]
    v1 = {"server": {"model_runner": "V1"}}
    v1 = _record(v1, _bundle(tmp_path, "eagle3"), temperatures=(1.0,), runtime="native", speculative=True)
    assert v1["sampler_probe"]["verdict"] == "fail" and probe_calls == [1]
