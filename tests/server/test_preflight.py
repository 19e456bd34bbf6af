"""`specstack preflight`: vLLM 0.32.0's own parser and config classes accept every method of both model
sets, and each bad case fails in seconds with the reason and the fix (no weights are loaded)."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from specstack.cli import preflight as preflight_command
from specstack.config import methods
from specstack.config.methods import ServePlan
from specstack.server import model_checks, preflight

from .tiny_base import without_chat_template

pytestmark = pytest.mark.config

REPO = Path(__file__).resolve().parents[2]
METHODS = methods.names()
FAST = 5.0  # seconds a rejected plan may take once vLLM is imported


@pytest.fixture(scope="module", autouse=True)
def vllm_imported():
    """Import vLLM once (about 10 s on 2 cores), so the timings below measure the checks themselves."""
    assert preflight.check(methods.build("baseline", platform="gpu-container")) == []


def _with_spec(plan: ServePlan, spec_json: str) -> ServePlan:
    argv = list(plan.argv)
    argv[argv.index("--speculative-config") + 1] = spec_json
    return dataclasses.replace(plan, argv=argv)


def _with_argv(plan: ServePlan, *more: str) -> ServePlan:
    return dataclasses.replace(plan, argv=[*plan.argv, *more])


def _timed(plan: ServePlan) -> preflight.Report:
    t = time.monotonic()
    report = preflight.run_checks(plan)
    assert time.monotonic() - t < FAST, f"pre-flight took {time.monotonic() - t:.1f} s"
    return report


# --- every method of both model sets is accepted --------------------------------------------------------


@pytest.mark.parametrize("platform", ["gpu-container", "gpu-native"])
@pytest.mark.parametrize("method", METHODS)
def test_default_model_set_is_accepted_offline(method, platform):
    report = preflight.run_checks(methods.build(method, platform=platform))
    assert report.errors == []
    assert any("argument parser" in c for c in report.checked)
    assert any(
        ("SpeculativeConfig" if methods.is_speculative(method) else "observability") in c for c in report.checked
    )
    # Hub models are not on this machine: the engine-config step says it was skipped, and why.
    assert len(report.skipped) == 1 and "never downloads" in report.skipped[0]


@pytest.mark.parametrize("method", METHODS)
def test_tiny_model_set_builds_the_whole_engine_config(method, models_dir):
    plan = methods.build(method, model_set_name="tiny", platform="cpu-native", models_dir=str(models_dir))
    report = preflight.run_checks(plan)
    assert report.errors == [] and report.skipped == []
    assert any(c.startswith("engine config") for c in report.checked)


def test_engine_config_is_skipped_for_another_platform(models_dir):
    plan = methods.build("ngram", model_set_name="tiny", platform="gpu-container", models_dir=str(models_dir))
    report = preflight.run_checks(plan)
    assert report.errors == [] and "platform-specific" in report.skipped[0]


# --- bad cases fail fast, with the reason and the fix ------------------------------------------------


def test_unknown_flag():
    plan = _with_argv(methods.build("baseline", platform="gpu-container"), "--max-model-length", "2048")
    (error,) = _timed(plan).errors
    assert "unrecognized arguments: --max-model-length" in error
    assert "did you mean --max-model-len" in error and "services/methods.toml" in error


def test_unknown_speculative_config_key():
    plan = _with_spec(
        methods.build("ngram", platform="gpu-container"),
        '{"method":"ngram","num_speculative_tokens":4,"prompt_lookup_minn":2}',
    )
    (error,) = _timed(plan).errors
    assert "unknown key 'prompt_lookup_minn'" in error and "forbids unknown keys" in error
    assert "Did you mean 'prompt_lookup_min'" in error


def test_unknown_key_from_a_k_override_is_caught_too():
    plan = methods.build("eagle3", platform="gpu-container", spec_override={"num_speculative_token": 2})
    (error,) = _timed(plan).errors
    assert "'num_speculative_token'" in error and "'num_speculative_tokens'" in error


@pytest.mark.parametrize(
    "spec,expected",
    [
        ('{"method":"ngram","num_speculative_tokens":0}', "greater than 0"),
        ('{"method":"ngrams","num_speculative_tokens":4}', "Input should be 'ngram'"),
        ('{"method":"ngram","num_speculative_tokens":4,"tensor_parallel_size":2}', "draft_tensor_parallel_size"),
        ('{"method":"ngram", not json', "is not valid JSON"),
    ],
)
def test_bad_speculative_values(spec, expected):
    (error,) = _timed(_with_spec(methods.build("ngram", platform="gpu-container"), spec)).errors
    assert expected in error and "services/methods.toml" in error


def test_missing_arctic_inference_for_suffix(monkeypatch):
    # A None entry makes the import fail exactly as when the package is not installed.
    monkeypatch.setitem(sys.modules, "arctic_inference.suffix_decoding", None)
    report = _timed(methods.build("suffix", platform="gpu-container"))
    (error,) = report.errors
    assert "arctic_inference.suffix_decoding" in error and "arctic-inference==0.3.0" in error
    # Other methods do not need it.
    assert preflight.check(methods.build("ngram", platform="gpu-container")) == []


def test_per_request_metrics_without_a_speculative_config():
    plan = _with_argv(
        methods.build("baseline", platform="gpu-container"), "--per-request-spec-decode-metrics", "summary"
    )
    (error,) = _timed(plan).errors
    assert "requires speculative decoding to be enabled" in error and "[speculative_common]" in error


def test_per_request_metrics_without_spec_fails_in_the_engine_config_too(models_dir):
    plan = _with_argv(
        methods.build("baseline", model_set_name="tiny", platform="cpu-native", models_dir=str(models_dir)),
        "--per-request-spec-decode-metrics",
        "detailed",
    )
    (error,) = preflight.run_checks(plan).errors
    assert "requires speculative decoding" in error


def test_engine_config_catches_what_the_flags_alone_cannot(models_dir):
    plan = _with_argv(
        methods.build("eagle3", model_set_name="tiny", platform="cpu-native", models_dir=str(models_dir)),
        "--max-model-len",
        "100000",
    )
    (error,) = preflight.run_checks(plan).errors
    assert "would not start" in error and "max_model_len" in error


def test_missing_local_model_folder(tmp_path):
    plan = methods.build("draft_model", model_set_name="tiny", platform="cpu-native", models_dir=str(tmp_path))
    errors = preflight.run_checks(plan).errors
    assert len(errors) == 2 and all("no config.json" in e and "specstack tiny-models" in e for e in errors)


# --- chat template: the acceptance phase talks to /v1/chat/completions ----------------------------------------


@pytest.fixture(scope="module")
def base_models(models_dir, tmp_path_factory) -> Path:
    """A models folder whose tiny-mimo and tiny-qwen3 have no chat template (base checkpoints)."""
    folder = tmp_path_factory.mktemp("tiny-base")
    for name in ("tiny-mimo", "tiny-qwen3"):
        without_chat_template(models_dir / name, folder / name)
    return folder


@pytest.mark.parametrize("method", ["mtp-baseline", "mtp"])
def test_a_target_without_chat_template_is_refused_naming_the_fix_for_both_sides(method, base_models):
    plan = methods.build(method, model_set_name="tiny", platform="cpu-native", models_dir=str(base_models))
    report = _timed(plan)
    (error,) = report.errors
    assert f"{base_models}/tiny-mimo ships no chat template" in error
    assert "HTTP 400" in error and "/v1/chat/completions" in error
    assert 'add chat-template = "template_basic.jinja" to the `flags` of mtp-baseline and mtp' in error
    assert not any(c.startswith("engine config") for c in report.checked)


def test_the_fix_the_refusal_names_passes(base_models):
    """vLLM's own template_basic.jinja, by name, as the message says: the whole engine config is built."""
    plan = methods.build(
        "mtp-baseline",
        model_set_name="tiny",
        platform="cpu-native",
        models_dir=str(base_models),
        extra={"chat-template": "template_basic.jinja"},
    )
    report = preflight.run_checks(plan)
    assert report.errors == [] and report.skipped == []
    assert any(c.startswith("engine config") for c in report.checked)


def test_a_template_vllm_cannot_load_is_refused(base_models):
    plan = methods.build(
        "baseline",
        model_set_name="tiny",
        platform="cpu-native",
        models_dir=str(base_models),
        extra={"chat-template": "/nowhere/plain.jinja"},
    )
    (error,) = preflight.run_checks(plan).errors  # vLLM's own pre-start check says it
    assert error.startswith(
        "`vllm serve` pre-start check: The supplied chat template string "
        "(/nowhere/plain.jinja) appears path-like, but doesn't exist!"
    ), error
    (problem,), _ = model_checks.check(plan)  # and the native runtime's model checks
    assert "--chat-template '/nowhere/plain.jinja': vLLM 0.32.0 cannot load it" in problem


def test_the_shipped_tiny_models_have_their_template_checked(models_dir):
    plan = methods.build("mtp", model_set_name="tiny", platform="cpu-native", models_dir=str(models_dir))
    assert any(c.startswith("chat template") for c in preflight.run_checks(plan).checked)


def test_native_runs_refuse_it_too(base_models):
    """specstack run --runtime native checks the model folders (model_checks) instead of the deep pre-flight."""
    plan = methods.build("mtp", model_set_name="tiny", platform="cpu-native", models_dir=str(base_models))
    problems, _ = model_checks.check(plan)
    assert len(problems) == 1 and "ships no chat template" in problems[0]


def test_cli_in_the_container_exits_2_with_the_message(base_models):
    out = _cli("--method", "mtp", "--model-set", "tiny", "--platform", "cpu-native", "--models-dir", str(base_models))
    assert out.returncode == 2, out.stdout + out.stderr
    assert "preflight mtp (tiny, cpu-native): FAILED" in out.stdout and "ships no chat template" in out.stdout


# --- command line -------------------------------------------------------------------------------------


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "specstack.cli.preflight", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        cwd=REPO,
    )


def test_cli_all_methods_as_run_in_a_container():
    """`python -m specstack.cli.preflight` (what `make run` starts in the server image), HF offline."""
    out = _cli("--all", "--platform", "gpu-container", "--json")
    assert out.returncode == 0, out.stderr
    reports = json.loads(out.stdout)
    assert [r["method"] for r in reports] == METHODS and all(r["ok"] for r in reports)


def test_cli_bad_override_fails_with_exit_2(capsys):
    assert (
        preflight_command.main(
            ["--method", "ngram", "--platform", "gpu-container", "--spec-override", '{"prompt_lookup_mim": 2}']
        )
        == 2
    )
    printed = capsys.readouterr().out
    assert "preflight ngram (default, gpu-container): FAILED" in printed and "prompt_lookup_mim" in printed


def test_cli_names_the_valid_methods(capsys):
    assert preflight_command.main(["--method", "Suffix"]) == 2
    printed = capsys.readouterr().out
    assert "use 'suffix'" in printed and "FAILED" in printed
