"""make PREFIX_CACHING=1 reaches every vLLM container as SPECSTACK_PREFIX_CACHING, whose serve_args builds the
same argv as the native runtime with --prefix-caching, and the collector records it (--prefix-caching). Static:
compose.yaml read and interpolated here, make in dry-run mode; no Docker engine."""

from __future__ import annotations

import subprocess

import pytest
import yaml

from specstack.config import methods

from ..compose.gpu_form.render import COMPOSE, REPO, container_plan, interpolate, lock_env, vllm_services

pytestmark = pytest.mark.config

ENV = methods.serve_args.PREFIX_CACHING_ENV


@pytest.fixture(scope="module")
def raw() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def test_every_vllm_service_passes_the_variable_through(raw):
    assert raw["x-vllm"]["environment"][ENV] == "${SPECSTACK_PREFIX_CACHING:-}"
    for name, svc in vllm_services(interpolate(raw, {**lock_env(), ENV: "1"})).items():
        assert svc["environment"][ENV] == "1", name
    for svc in vllm_services(interpolate(raw, lock_env())).values():
        assert svc["environment"][ENV] == ""  # unset: methods.toml's [common]


@pytest.mark.parametrize("value,caching", [("1", True), ("", None)])
@pytest.mark.parametrize("method", ["baseline", "eagle3"])
def test_the_container_plan_is_the_native_plan(raw, method, value, caching):
    svc = interpolate(raw, {**lock_env(), ENV: value})["services"][f"vllm-{method}"]
    plan = container_plan(svc, {})
    assert plan == methods.build(method, platform="gpu-container", prefix_caching=caching).to_json()
    assert ("--enable-prefix-caching" in plan["argv"]) is bool(caching)


def _dry_run(*variables: str) -> str:
    out = subprocess.run(
        ["make", "-n", "--no-print-directory", "_compose-method", "METHOD=ngram", "RUN_ID=r", *variables],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.replace("\\\n", " ")  # continued lines as the shell reads them


def test_make_sets_the_variable_for_compose_and_the_collector_records_it():
    on = _dry_run("PREFIX_CACHING=1")
    assert f"{ENV}='1'" in on and f"{ENV}=''" not in on
    collector = next(line for line in on.splitlines() if "collector run --runtime url" in line)
    assert "--prefix-caching" in collector
    off = _dry_run()
    assert f"{ENV}=''" in off and "--prefix-caching" not in off


def test_make_refuses_a_value_serve_args_would_refuse():
    out = subprocess.run(
        ["make", "--no-print-directory", "compose-check-method", "METHOD=ngram", "PREFIX_CACHING=yes", "DOCKER=false"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode != 0 and "PREFIX_CACHING must be 1" in out.stderr
