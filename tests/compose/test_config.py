"""The CPU form against the GPU form, as the real compose CLI resolves them (`docker compose config`): they
differ only in the keys compose.cpu.yaml's header lists. Compose can exit 0 on some config errors, so these
tests read its output, not its exit status; and a compose command that fails must fail make."""

from __future__ import annotations

import os

import pytest

from specstack.config import methods

from . import engine
from .conftest import compose_config, cpuset, read_lock
from .stack import REPO, Stack

pytestmark = pytest.mark.compose

VLLM = [f"vllm-{m}" for m in methods.names()]
# The GPU services that run the suffix image (the stock image + arctic-inference), built by compose.
SUFFIX_IMAGE_SERVICES = ("vllm-suffix", "vllm-suffix-default")
CPU_LOCK = read_lock(REPO / "images.cpu.lock")
GPU_LOCK = read_lock(REPO / "images.lock")


def differences(a, b, path=()) -> dict[tuple, tuple]:
    """path -> (GPU value, CPU value) for every leaf that differs; a missing side is the string '<absent>'."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = {}
        for key in set(a) | set(b):
            out.update(differences(a.get(key, "<absent>"), b.get(key, "<absent>"), path + (key,)))
        return out
    return {} if a == b else {path: (a, b)}


@pytest.fixture(scope="module")
def forms(stack: Stack):
    gpu = compose_config(stack, "images.lock", "compose.yaml")
    cpu = compose_config(stack, "images.cpu.lock", "compose.yaml", "compose.cpu.yaml")
    return gpu, cpu


def test_cpu_form_differs_from_the_gpu_form_only_in_the_listed_keys(forms, stack):
    gpu, cpu = forms
    diff = differences(gpu, cpu)
    expected: dict[tuple, object] = {}
    models_ro = {"type": "volume", "source": "models", "target": "/models", "read_only": True, "volume": {}}
    for svc in VLLM:
        g = gpu["services"][svc]
        expected.update(
            {
                ("services", svc, "image"): CPU_LOCK["VLLM_IMAGE"],
                ("services", svc, "entrypoint"): [
                    "python3",
                    "/services/serve_args.py",
                    "--platform",
                    "cpu-container",
                    "--exec",
                ],
                ("services", svc, "deploy"): "<absent>",
                ("services", svc, "cpuset"): cpuset(),
                ("services", svc, "shm_size"): str(2 * 1024**3),
                ("services", svc, "healthcheck", "interval"): "3s",
                ("services", svc, "environment", "SPECSTACK_MODELS"): "/models",
                ("services", svc, "volumes"): g["volumes"] + [models_ro],
            }
        )
    expected.update(
        {
            **{("services", svc, key): "<absent>" for svc in SUFFIX_IMAGE_SERVICES for key in ("build", "pull_policy")},
            ("services", "collector", "image"): CPU_LOCK["COLLECTOR_IMAGE"],
            ("services", "collector", "build"): "<absent>",
            ("services", "collector", "pull_policy"): "<absent>",
            ("services", "collector", "environment", "SPECSTACK_PLATFORM"): "cpu-container",
            ("services", "collector", "environment", "SPECSTACK_MODELS"): "/models",
            ("services", "collector", "volumes"): gpu["services"]["collector"]["volumes"] + [models_ro],
            ("services", "prometheus", "image"): CPU_LOCK["PROMETHEUS_IMAGE"],  # from the lock file, not the override
            ("volumes", "models"): {"name": f"{stack.project}_models"},
            ("x-vllm", "image"): CPU_LOCK["VLLM_IMAGE"],
        }
    )
    tiny = cpu["services"]["tiny-models"]
    expected[("services", "tiny-models")] = tiny
    got = {path: cpu_value for path, (gpu_value, cpu_value) in diff.items() if path[0] != "x-vllm-cpu"}
    assert set(got) == set(expected), {
        "unexpected": sorted(set(got) - set(expected)),
        "missing": sorted(set(expected) - set(got)),
    }
    for path, value in expected.items():
        assert got[path] == value, (path, got[path])
    # The one-off model builder: no network, no capability, its own volume only.
    assert tiny["network_mode"] == "none" and tiny["cap_drop"] == ["ALL"] and tiny["profiles"] == ["tools"]
    assert {v["target"]: v.get("read_only", False) for v in tiny["volumes"]} == {"/models": False, "/services": True}


def test_gpu_form_is_unchanged(forms):
    gpu, _ = forms
    for svc in VLLM:
        s = gpu["services"][svc]
        (device,) = s["deploy"]["resources"]["reservations"]["devices"]
        assert device["driver"] == "nvidia" and device["capabilities"] == ["gpu"]
        assert s["entrypoint"][3] == "gpu-container" and "cpuset" not in s
        assert s["image"] == (
            GPU_LOCK["VLLM_IMAGE"]
            if svc not in SUFFIX_IMAGE_SERVICES
            else "specstack-vllm-suffix:v0.32.0-arctic-inference-0.3.0"
        )
    assert gpu["services"]["collector"]["build"]["context"].endswith("/collector")
    assert "tiny-models" not in gpu["services"] and "models" not in gpu.get("volumes", {})


def test_cpu_serve_plan_is_methods_toml(forms):
    """The platform's flags and environment live in methods.toml; compose passes only its name."""
    plan = methods.build("ngram", model_set_name="tiny", platform="cpu-container", models_dir="/models")
    assert plan.flags["enforce-eager"] is True and plan.flags["host"] == "0.0.0.0"
    assert plan.env == {
        "VLLM_USE_V2_MODEL_RUNNER": "0",
        "VLLM_HTTP_TIMEOUT_KEEP_ALIVE": "300",
        "VLLM_WORKER_MULTIPROC_METHOD": "fork",  # vLLM's CPU platform spawns its engine core whatever this says
        "VLLM_CPU_KVCACHE_SPACE": "1",
    }
    text = (REPO / "compose.cpu.yaml").read_text() + (REPO / "compose.yaml").read_text()
    for name in plan.env:
        assert name not in text, name
    for flag in plan.flags:
        assert f"--{flag}" not in text, flag


def test_a_failing_compose_command_fails_make(stack, tmp_path):
    """A lock file without COLLECTOR_IMAGE: compose refuses to interpolate; make must stop, naming it,
    before any container of the project starts."""
    bad = stack.dir / "images.broken.lock"
    bad.write_text("\n".join(f"{k}={v}" for k, v in CPU_LOCK.items() if k != "COLLECTOR_IMAGE") + "\n")
    os.chown(bad, stack.user.pw_uid, stack.user.pw_gid)
    project = stack.project + "-broken"
    out, _ = stack.make(
        "run",
        "METHOD=ngram",
        "PLATFORM=cpu",
        "MODEL_SET=tiny",
        "IMAGES_LOCK=images.broken.lock",
        env=stack.env(COMPOSE_PROJECT_NAME=project),
        log="broken-lock",
    )
    bad.unlink()
    assert out.returncode != 0, out.stdout
    assert "required variable COLLECTOR_IMAGE is missing a value" in out.stdout
    assert engine.project_ids(project) == []


def test_an_unknown_platform_is_refused(stack):
    out, _ = stack.make("run", "METHOD=ngram", "PLATFORM=tpu", log="bad-platform")
    assert out.returncode != 0 and "PLATFORM must be gpu (the default) or cpu, not 'tpu'" in out.stdout
