"""The comparison of two constructed runs: verdicts, not-comparable reasons, output divergence, the gate and
the exit status of the command. Oracles are computed here from the runs' own figures, never pinned numbers."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from specstack.cli.main import main
from specstack.compare import build, gate
from specstack.compare.pairing import SHAPE

from tests.bundles import HIST, TEXTS, figures, make_run, perturb, write_method
from tests.report.test_report import FixedTokenizers, WordTokenizer


pytestmark = pytest.mark.unit


def _compare(a, b, spec: str | None = None, tok=None):
    return build.compare(a, b, thresholds=gate.parse(spec), tokenizers=FixedTokenizers(tok), with_plots=False)


def _one(rows, **match):
    found = [r for r in rows if all((r.get(k) if isinstance(r, dict) else getattr(r, k)) == v
                                    for k, v in match.items())]
    assert len(found) == 1, (match, found)
    return found[0]


def test_a_run_against_itself_changes_nothing_and_exits_0(run_a, tmp_path, capsys):
    cmp = _compare(run_a, run_a, "acceptance_length:-2%,throughput:-5%,tpot_p50:+5%", WordTokenizer())
    assert cmp.changed() == [] and not cmp.failed
    rows = cmp.acceptance + cmp.positions + cmp.histogram
    assert rows and all(r["verdict"] == "same" for r in rows)
    assert cmp.speed and all(r["verdict"] == "within noise" for r in cmp.speed)
    assert all(s["verdict"] == "same" for s in cmp.outputs_summary)
    out = tmp_path / "out"
    assert main(["compare", str(run_a), str(run_a), "--out", str(out), "--fail-on", "acceptance_length:-2%"]) == 0
    for name in ("compare.md", "compare.html", "compare.json", "compare_positions_ngram.png"):
        assert (out / name).stat().st_size > 0, name
    doc = json.loads((out / "compare.json").read_text())
    assert doc["changed"] == [] and doc["gate_failed"] is False
    assert "0 figure(s) changed" in (out / "compare.md").read_text()
    assert str(tmp_path) not in (out / "compare.json").read_text()   # no host paths in what is handed on


def test_k2_against_k4_flags_the_acceptance_length_and_rules_out_the_shape(tmp_path):
    a, b = make_run(tmp_path, "k2", k=2), make_run(tmp_path, "k4", k=4)
    cmp = _compare(a, b)
    pair = _one(cmp.pairs, method="ngram", task="code")
    assert [d.fact for d in pair.differences] == ["K"]
    length = _one(cmp.acceptance, method="ngram", task="code", figure="acceptance_length")
    fa, fb = figures(HIST[2]), figures(HIST[4])
    assert length["a"] == fa["mean_acceptance_length"] and length["b"] == fb["mean_acceptance_length"]
    assert length["verdict"] == "changed" and length["relative"] == pytest.approx(
        fb["mean_acceptance_length"] / fa["mean_acceptance_length"] - 1)
    for r in [r for r in cmp.positions + cmp.histogram if r["method"] == "ngram"]:
        assert r["verdict"].startswith("not comparable: other K (2 → 4)") and not r["comparable"]
    assert SHAPE in pair.differences[0].rules_out
    # speed is still compared: the K does not make a machine slower by definition
    assert all(r["comparable"] for r in cmp.speed)


def test_a_perturbed_copy_is_flagged_and_fails_the_gate(run_a, tmp_path, capsys):
    b = perturb(run_a, tmp_path / "run-b", factor=0.8)
    cmp = _compare(run_a, b, "acceptance_length:-2%")
    row = _one(cmp.acceptance, method="ngram", task="code", figure="acceptance_length")
    assert row["verdict"] == "changed" and row["relative"] < -0.02
    assert cmp.failed and any(g["failed"] and "ngram code" in g["figure"] for g in cmp.gate)
    # speed and outputs untouched: no change there
    assert all(r["verdict"] == "within noise" for r in cmp.speed)
    code = main(["compare", str(run_a), str(b), "--out", str(tmp_path / "o"), "--fail-on", "acceptance_length:-2%"])
    assert code == 1
    assert "regression: acceptance_length:-2%" in capsys.readouterr().out
    # a threshold wider than the change passes
    change = -row["relative"] * 100
    assert main(["compare", str(run_a), str(b), "--out", str(tmp_path / "o"),
                 "--fail-on", f"acceptance_length:-{change + 1:.1f}%"]) == 0


def test_one_count_is_a_change(run_a, tmp_path):
    """Exact sums: a single accepted draft more is "changed", not noise."""
    b = tmp_path / "run-b"
    shutil.copytree(run_a, b)
    path = b / "ngram" / "summary.json"
    s = json.loads(path.read_text())
    hist = list(HIST[4])
    hist[3], hist[4] = hist[3] + 1, hist[4] - 1
    s["tasks"]["chat"].update(figures(hist))
    path.write_text(json.dumps(s))
    cmp = _compare(run_a, b)
    assert _one(cmp.acceptance, task="chat", figure="acceptance_length")["verdict"] == "changed"
    assert _one(cmp.acceptance, task="code", figure="acceptance_length")["verdict"] == "same"
    assert [r["position"] for r in cmp.histogram if r["verdict"] == "changed"] == [3, 4]


def test_slower_speed_is_changed_with_an_interval_and_gated(run_a, tmp_path):
    b = make_run(tmp_path, "slow", speed=0.5)
    cmp = _compare(run_a, b, "throughput:-10%")
    row = _one(cmp.speed, method="ngram", task="code", concurrency=1, figure="throughput")
    assert row["ratio_high"] < 1.0 and row["verdict"] == "changed (worse)"
    assert _one(cmp.speed, method="ngram", task="code", concurrency=1, figure="tpot_p50")["verdict"] == \
        "changed (worse)"
    assert _one(cmp.speed, method="baseline", task="code", concurrency=1, figure="throughput")["verdict"] == \
        "within noise"
    assert cmp.failed
    assert {g["basis"] for g in cmp.gate if g["failed"]} == {"95 % interval"}
    # under three repeats a side: the point decides, and says so
    one = make_run(tmp_path, "one", repeats=1)
    slow = make_run(tmp_path, "slow1", repeats=1, speed=0.5)
    cmp = _compare(one, slow, "throughput:-10%")
    assert _one(cmp.speed, method="ngram", task="code", concurrency=1, figure="throughput")["verdict"].startswith(
        "point only")
    assert cmp.failed and {g["basis"] for g in cmp.gate if g["failed"]} == {"point only"}


@pytest.mark.parametrize("change,fact", [
    (dict(inputs_sha="b" * 64), "inputs"),
    (dict(target="/elsewhere/other-model"), "target"),
])
def test_other_inputs_or_target_rule_out_every_figure(run_a, tmp_path, change, fact):
    b = make_run(tmp_path, "other", **change)
    cmp = _compare(run_a, b, "acceptance_length:-2%")
    for rows in (cmp.acceptance, cmp.positions, cmp.histogram, cmp.speed):
        assert rows and all(r["verdict"].startswith(f"not comparable: other {fact}") for r in rows)
    assert all(s["verdict"].startswith(f"not comparable: other {fact}") for s in cmp.outputs_summary)
    assert cmp.changed() == []
    # the gate checked nothing, and a gate that checked nothing fails
    assert cmp.failed and cmp.gate[0]["basis"] == "nothing checked"


def test_the_same_model_in_another_folder_and_another_vllm_are_compared(run_a, tmp_path):
    b = make_run(tmp_path, "moved", target="/other/host/models/tiny", vllm="0.33.0")
    cmp = _compare(run_a, b)
    pair = _one(cmp.pairs, method="ngram", task="code")
    assert [d.fact for d in pair.differences] == ["vLLM version"] and not pair.differences[0].rules_out
    assert all(r["verdict"] == "same" for r in cmp.acceptance)


def test_other_hardware_rules_out_speed_only(run_a, tmp_path):
    b = make_run(tmp_path, "arm", machine="aarch64")
    cmp = _compare(run_a, b)
    assert all(r["verdict"].startswith("not comparable: other hardware") for r in cmp.speed)
    assert all(r["verdict"] == "same" for r in cmp.acceptance)


def test_greedy_outputs_diverge_at_the_right_token(run_a, tmp_path):
    texts = {"code": {"r0": ("a b X d", "stop"), "r1": ("x y z", "length")}, "chat": TEXTS["chat"]}
    b = make_run(tmp_path, "div", texts=texts)
    cmp = _compare(run_a, b, tok=WordTokenizer())
    for method in ("baseline", "ngram"):
        row = _one(cmp.outputs, method=method, task="code", id="r0")
        assert row["same"] is False and row["first_token_divergence"] == 2 and row["first_char_divergence"] == 4
        assert _one(cmp.outputs, method=method, task="code", id="r1")["same"] is True
        assert _one(cmp.outputs_summary, method=method, task="code")["verdict"] == "changed (1 of 2 differ)"
        assert _one(cmp.outputs_summary, method=method, task="chat")["verdict"] == "same"
    # without the tokenizer: characters, and the summary says why
    cmp = _compare(run_a, b, tok=None)
    s = _one(cmp.outputs_summary, method="ngram", task="code")
    assert s["unit"] == "character" and s["first_divergence_min"] == 4 and "not loaded" in s["tokenizer"]


def test_a_method_only_in_one_run_is_listed(run_a, tmp_path):
    b = tmp_path / "more"
    shutil.copytree(run_a, b)
    write_method(b, "suffix", baseline="baseline", cells={}, texts=TEXTS)
    cmp = _compare(run_a, b)
    assert "suffix: only in B" in cmp.unmatched and {p.method for p in cmp.pairs} == {"baseline", "ngram"}


@pytest.mark.parametrize("spec,says", [
    ("acceptance_lenght:-2%", "unknown metric 'acceptance_lenght'"),
    ("acceptance_length:-2", "is not METRIC:±X%"),
    ("acceptance_length", "is not METRIC:±X%"),
    ("throughput:0%", "has no direction"),
])
def test_bad_thresholds_are_user_errors_naming_the_fix(run_a, spec, says, capsys):
    assert main(["compare", str(run_a), str(run_a), "--fail-on", spec]) == 2
    err = capsys.readouterr().err
    assert says in err and "--fail-on" in err and "Traceback" not in err


def test_a_missing_run_folder_is_a_user_error(run_a, tmp_path, capsys):
    assert main(["compare", str(run_a), str(tmp_path / "nope")]) == 2
    assert "no run folder" in capsys.readouterr().err


def test_threshold_direction_defaults_to_the_worse_one():
    t = {x.metric: x.percent for x in gate.parse("acceptance_length:2%,tpot_p99:5%, throughput:+1.5%")}
    assert t == {"acceptance_length": -2.0, "tpot_p99": 5.0, "throughput": 1.5}


def test_the_request_interval_sizes_a_change_and_brackets_no_change():
    from specstack.compare.acceptance import request_interval
    a = np.asarray([[4, 8, 2]] * 5 + [[4, 8, 3]] * 5, dtype=float)    # (R, D, C) per request
    b = np.asarray([[4, 16, 8]] * 5 + [[4, 16, 7]] * 5, dtype=float)
    iv = request_interval((a, b), "acceptance_length")
    assert iv["ratio"] == pytest.approx((1 + b[:, 2].sum() / b[:, 0].sum()) / (1 + a[:, 2].sum() / a[:, 0].sum()))
    assert 1.0 < iv["ratio_low"] <= iv["ratio"] <= iv["ratio_high"] and iv["requests_paired"] == 10
    same = request_interval((a, a.copy()), "acceptance_rate")
    assert same["ratio"] == 1.0 and same["ratio_low"] <= 1.0 <= same["ratio_high"]
    assert request_interval((a[:2], b[:2]), "acceptance_length")["ratio_low"] is None   # under MIN_REPEATS


def test_a_busy_host_marks_the_speed_rows(run_a, tmp_path):
    b = tmp_path / "busy"
    shutil.copytree(run_a, b)
    path = b / "ngram" / "summary.json"
    s = json.loads(path.read_text())
    for w in s["windows"]:
        if w["phase"] == "bench" and w["task"] == "code" and w["concurrency"] == 1:
            w["host_load"] = {"cores": 2, "open": 2 * 1.5, "close": 2 * 1.4}
    path.write_text(json.dumps(s))
    cmp = _compare(run_a, b)
    marked = {(r["method"], r["task"], r["concurrency"]) for r in cmp.speed if "busy host" in (r["note"] or "")}
    assert marked == {("ngram", "code", 1)}


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
    cmp = _compare(run_a, b)
    assert "ngram: only in A" in cmp.unmatched and "ngram: failed in B (no figures)" in cmp.unmatched
    assert {p.method for p in cmp.pairs} == {"baseline"}


def test_a_fact_one_side_did_not_record_is_unknown_not_a_difference(run_a, tmp_path):
    b = make_run(tmp_path, "old", vllm=None)
    pair = _one(_compare(run_a, b).pairs, method="ngram", task="code")
    assert pair.differences == [] and pair.unknown == ["vLLM version"]


def test_another_gpu_recorded_by_the_compose_host_rules_out_speed(run_a, tmp_path):
    b = tmp_path / "gpu"
    shutil.copytree(run_a, b)
    for side, name in ((run_a, "NVIDIA L4"), (b, "NVIDIA H100 80GB HBM3")):
        path = side / "ngram" / "summary.json"
        s = json.loads(path.read_text())
        s["provenance"] = {"host": {"gpu": {"source": "host", "gpus": [{"index": "0", "name": name}]}, "cpu": None}}
        path.write_text(json.dumps(s))
    cmp = _compare(run_a, b)
    pair = _one(cmp.pairs, method="ngram", task="code")
    assert [d.text() for d in pair.differences] == ["other hardware (gpu=NVIDIA L4 → gpu=NVIDIA H100 80GB HBM3)"]
    assert all(r["verdict"].startswith("not comparable: other hardware") for r in cmp.speed if r["method"] == "ngram")
    assert all(r["verdict"] == "same" for r in cmp.acceptance)


def test_an_unwritable_out_folder_is_a_user_error(run_a, tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    assert main(["compare", str(run_a), str(run_a), "--out", str(blocker / "sub")]) == 2
    assert "pass --out DIR" in capsys.readouterr().err
