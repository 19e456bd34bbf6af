"""The host pre-check of the GPU form: driver and compute capability, before anything is pulled."""

from __future__ import annotations

import pytest

from .stand_in import pulls_or_builds, run_make

pytestmark = pytest.mark.compose


def test_an_old_driver_is_refused_before_anything_is_pulled_with_the_fix(fake_stack):
    fake_stack["env"]["FAKE_DRIVER"] = "570.86.15"
    out = run_make(fake_stack, "run", "METHOD=ngram", "RUN_ID=r1", check=False)
    assert out.returncode != 0
    assert "driver 570.86.15 is too old for vllm/vllm-openai:v0.32.0" in out.stderr, out.stderr
    assert "VLLM_IMAGE=vllm/vllm-openai:v0.32.0-cu129 into images.env.local" in out.stderr
    assert "upgrade the driver to R580" in out.stderr
    assert pulls_or_builds(fake_stack) == []


def test_the_cu129_image_of_images_env_local_runs_on_that_driver(fake_stack):
    fake_stack["env"]["FAKE_DRIVER"] = "570.86.15"
    (fake_stack["dir"] / "images.env.local").write_text("VLLM_IMAGE=vllm/vllm-openai:v0.32.0-cu129\n")
    out = run_make(fake_stack, "run", "METHOD=ngram", "RUN_ID=r1")
    assert "host check" not in out.stderr and pulls_or_builds(fake_stack)


def test_a_gpu_without_bf16_is_refused(fake_stack):
    fake_stack["env"]["FAKE_CC"] = "7.5"
    out = run_make(fake_stack, "sweep", "RUN_ID=r1", check=False)
    assert out.returncode != 0
    assert "compute capability 7.5; bfloat16 in vLLM 0.32.0 needs 8.0+ (sm_80)" in out.stderr, out.stderr
    assert pulls_or_builds(fake_stack) == []
