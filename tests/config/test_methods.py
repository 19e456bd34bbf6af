"""services/methods.toml rendered by services/serve_args.py: the one source of serve arguments."""

import json
import subprocess
import sys

import pytest

from specstack.config import methods

pytestmark = pytest.mark.unit


def test_every_method_builds_and_only_spec_methods_get_per_request_metrics():
    for name in methods.names():
        plan = methods.build(name)
        argv = plan.argv
        assert argv[0] == plan.target
        has_spec = "--speculative-config" in argv
        assert has_spec == methods.is_speculative(name)
        assert ("--per-request-spec-decode-metrics" in argv) == has_spec
        assert "--no-async-scheduling" in argv  # explicit and identical for every method
        assert "--no-enable-prefix-caching" in argv


def test_reference_defaults():
    cfg = methods.load()
    plan = methods.build("suffix")
    assert plan.target == "Qwen/Qwen3-8B"
    assert plan.speculative_config == {
        "method": "suffix",
        "num_speculative_tokens": 16,
        "suffix_decoding_max_cached_requests": 0,
    }
    assert methods.build("eagle3").speculative_config["model"] == "RedHatAI/Qwen3-8B-speculator.eagle3"
    assert methods.build("mtp").target == methods.build("mtp-baseline").target == "XiaomiMiMo/MiMo-7B-Base"
    assert methods.baseline_of("mtp") == "mtp-baseline" and methods.baseline_of("ngram") == "baseline"
    assert cfg["common"]["served-model-name"] == "spec-demo"


def test_spec_json_is_one_argument():
    argv = methods.build("ngram").argv
    spec = json.loads(argv[argv.index("--speculative-config") + 1])
    assert spec == {"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_min": 2, "prompt_lookup_max": 4}


def test_override_platform_and_model_set():
    plan = methods.build(
        "draft_model",
        model_set_name="tiny",
        platform="cpu-native",
        models_dir="/m",
        spec_override={"num_speculative_tokens": 2},
    )
    assert plan.speculative_config == {
        "method": "draft_model",
        "model": "/m/tiny-qwen3-draft",
        "num_speculative_tokens": 2,
    }
    assert "--enforce-eager" in plan.argv and plan.env["VLLM_CPU_KVCACHE_SPACE"] == "1"


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: methods.build("NGRAM"), "case-sensitive: use 'ngram'"),
        (lambda: methods.build("medusa"), "unknown method 'medusa'; choose one of"),
        (lambda: methods.build("baseline", spec_override={"num_speculative_tokens": 2}), "no speculative config"),
        (
            lambda: methods.build("baseline", extra={"per-request-spec-decode-metrics": "summary"}),
            "needs a speculative config",
        ),
        (lambda: methods.build("ngram", model_set_name="huge"), "unknown model set 'huge'"),
        (lambda: methods.build("ngram", platform="tpu"), "unknown platform 'tpu'"),
    ],
)
def test_user_errors_name_the_fix(call, message):
    with pytest.raises(methods.MethodError, match=message):
        call()


def test_script_prints_the_same_plan_the_library_builds():
    out = subprocess.run(
        [
            sys.executable,
            str(methods.SERVICES_DIR / "serve_args.py"),
            "--method",
            "eagle3",
            "--platform",
            "gpu-container",
            "--print",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    printed = json.loads(out.stdout)
    assert printed == methods.build("eagle3", platform="gpu-container").to_json()
    # the keys in the order the plan was always printed (and written) in
    assert list(printed) == [
        "method",
        "label",
        "baseline",
        "target",
        "model_set",
        "platform",
        "speculative_config",
        "requires",
        "flags",
        "argv",
        "env",
        "model_runner",
    ]
    bad = subprocess.run(
        [sys.executable, str(methods.SERVICES_DIR / "serve_args.py"), "--method", "Eagle3", "--print"],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "case-sensitive" in bad.stderr


def test_every_method_pins_the_same_model_runner_on_every_platform():
    """suffix cannot run Model Runner V2 in 0.32.0 and the CPU build has no Triton, so one pin (V1) holds on every
    platform, for every method of it: no comparison also compares runners. The one exception is the platform that
    exists to measure the other runner, gpu-native-v2 (V2 for every method of it; vLLM refuses suffix there)."""
    cfg = methods.load()
    for platform in cfg["platforms"]:
        want = ("V2", "1") if platform == "gpu-native-v2" else ("V1", "0")
        plans = [methods.build(name, model_set_name="tiny", platform=platform) for name in methods.names()]
        assert {p.model_runner for p in plans} == {want[0]}, platform
        assert {p.env["VLLM_USE_V2_MODEL_RUNNER"] for p in plans} == {want[1]}, platform


def test_a_runner_pin_vllm_cannot_read_is_refused():
    cfg = methods.load()
    cfg["env"]["VLLM_USE_V2_MODEL_RUNNER"] = "true"
    with pytest.raises(methods.MethodError, match=r'only "0" \(V1\) or "1" \(V2\)'):
        methods.build("baseline", cfg=cfg)


def test_suffix_is_labelled_and_its_vllm_default_variant_differs_in_the_cache_only():
    seed, default = methods.build("suffix"), methods.build("suffix-default")
    assert seed.label == "suffix (prompt trees only)"
    assert "10000" in default.label and default.baseline == seed.baseline == "baseline"
    assert seed.speculative_config["suffix_decoding_max_cached_requests"] == 0
    assert default.speculative_config == {**seed.speculative_config, "suffix_decoding_max_cached_requests": 10000}
    assert {k: v for k, v in default.flags.items() if k != "speculative-config"} == {
        k: v for k, v in seed.flags.items() if k != "speculative-config"
    }
    assert methods.build("ngram").label == "ngram"
