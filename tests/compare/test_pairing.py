"""What may be compared: the pairs, what differs, and what each difference rules out."""

from __future__ import annotations

import json
import shutil

import pytest

from specstack.compare import build
from tests.bundles import TEXTS, contradict, make_run, write_method

from .common import compare, one

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    "change,fact",
    [
        (dict(inputs_sha="b" * 64), "inputs"),
        (dict(target="/elsewhere/other-model"), "target"),
    ],
)
def test_other_inputs_or_target_rule_out_every_figure(run_a, tmp_path, change, fact):
    b = make_run(tmp_path, "other", **change)
    cmp = compare(run_a, b, "acceptance_length:-2%")
    for rows in (cmp.acceptance, cmp.positions, cmp.histogram, cmp.speed):
        assert rows and all(r["verdict"].startswith(f"not comparable: other {fact}") for r in rows)
    assert all(s["verdict"].startswith(f"not comparable: other {fact}") for s in cmp.outputs_summary)
    assert cmp.changed() == []
    # the gate checked nothing, and a gate that checked nothing fails
    assert cmp.failed and cmp.gate[0]["basis"] == "nothing checked"


def test_the_same_model_in_another_folder_and_another_vllm_are_compared(run_a, tmp_path):
    b = make_run(tmp_path, "moved", target="/other/host/models/tiny", vllm="0.33.0")
    cmp = compare(run_a, b)
    pair = one(cmp.pairs, method="ngram", task="code")
    assert [d.fact for d in pair.differences] == ["vLLM version"] and not pair.differences[0].rules_out
    assert all(r["verdict"] == "same" for r in cmp.acceptance)


def test_other_hardware_rules_out_speed_only(run_a, tmp_path):
    b = make_run(tmp_path, "arm", machine="aarch64")
    cmp = compare(run_a, b)
    assert all(r["verdict"].startswith("not comparable: other hardware") for r in cmp.speed)
    assert all(r["verdict"] == "same" for r in cmp.acceptance)


def test_a_method_only_in_one_run_is_listed(run_a, tmp_path):
    b = tmp_path / "more"
    shutil.copytree(run_a, b)
    write_method(b, "suffix", baseline="baseline", cells={}, texts=TEXTS)
    cmp = compare(run_a, b)
    assert "suffix: only in B" in cmp.unmatched and {p.method for p in cmp.pairs} == {"baseline", "ngram"}


def test_a_method_that_failed_in_one_run_is_named(run_a, tmp_path):
    b = tmp_path / "failed"
    shutil.copytree(run_a, b)
    shutil.move(b / "ngram", b / "ngram.failed-20261130T120000")
    path = b / "ngram.failed-20261130T120000" / "summary.json"
    s = json.loads(path.read_text())
    s.update(status="failed", error="server did not start")
    path.write_text(json.dumps(s))
    m = json.loads((b / "manifest.json").read_text())
    m["methods"]["ngram"] = {"status": "failed", "dir": "ngram.failed-20261130T120000", "error": "server did not start"}
    (b / "manifest.json").write_text(json.dumps(m))
    cmp = compare(run_a, b)
    assert "ngram: only in A" in cmp.unmatched and "ngram: failed in B (no figures)" in cmp.unmatched
    assert {p.method for p in cmp.pairs} == {"baseline"}


def test_a_fact_one_side_did_not_record_is_unknown_not_a_difference(run_a, tmp_path):
    b = make_run(tmp_path, "old", vllm=None)
    pair = one(compare(run_a, b).pairs, method="ngram", task="code")
    assert pair.differences == [] and pair.unknown == ["vLLM version"]


def test_another_gpu_recorded_by_the_compose_host_rules_out_speed(run_a, tmp_path):
    b = tmp_path / "gpu"
    shutil.copytree(run_a, b)
    for side, name in ((run_a, "NVIDIA L4"), (b, "NVIDIA H100 80GB HBM3")):
        path = side / "ngram" / "summary.json"
        s = json.loads(path.read_text())
        s["provenance"] = {"host": {"gpu": {"source": "host", "gpus": [{"index": "0", "name": name}]}, "cpu": None}}
        path.write_text(json.dumps(s))
    cmp = compare(run_a, b)
    pair = one(cmp.pairs, method="ngram", task="code")
    assert [d.text() for d in pair.differences] == ["other hardware (gpu=NVIDIA L4 → gpu=NVIDIA H100 80GB HBM3)"]
    assert all(r["verdict"].startswith("not comparable: other hardware") for r in cmp.speed if r["method"] == "ngram")
    assert all(r["verdict"] == "same" for r in cmp.acceptance)


def test_a_side_measured_despite_a_contradicting_server_is_noted(run_a, tmp_path):
    b = make_run(tmp_path, "trusted")
    found = "asked for ngram with num_speculative_tokens=4 (services/methods.toml), but the server drafts K=2"
    contradict(b, "ngram", [found])
    cmp = compare(run_a, b)
    note = (
        f"B: ⚠ ngram: measured with --trust-server although the server contradicted the method: {found}. "
        "Its figures are what that server ran, not what ngram asks for."
    )
    assert [n for n in cmp.unmatched if "contradicted" in n] == [note]
    assert note in build.write(cmp, tmp_path / "out")["md"].read_text()
