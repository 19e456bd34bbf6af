"""collector/specstack/host/compose_stack.py and stack.py: what the compose lifecycle reads from methods.toml
(without tomllib), the variables compose gets per method and slot, make's knobs on the command line."""

from __future__ import annotations

import pytest

from specstack.config import methods
from specstack.host import HostError, cli
from specstack.host.compose_stack import Stack
from specstack.host.stack import METHODS_TOML, MethodsToml, Place, Settings

from .test_cli import REPO

pytestmark = pytest.mark.unit


def test_methods_toml_read_without_tomllib_agrees_with_the_package():
    found = MethodsToml.read(REPO / METHODS_TOML)
    tables = methods.load()
    assert found.names == methods.names()
    assert found.spec == [m for m, t in tables["methods"].items() if "speculative-config" in t]
    assert found.baselines == {m: t["baseline"] for m, t in tables["methods"].items() if t.get("baseline")}
    assert found.dtype == tables["common"]["dtype"]


def _stack(**knobs) -> Stack:
    return Stack(Settings(methods=MethodsToml.read(REPO / METHODS_TOML), **knobs))


def test_k_reaches_the_speculative_methods_only_and_a_slot_its_own_port(monkeypatch):
    monkeypatch.setenv("VLLM_PORT", "8100")
    stack = _stack(k="3", wait_timeout="900")
    assert stack.env(method="ngram")["SPECSTACK_SPEC_OVERRIDE"] == '{"num_speculative_tokens":3}'
    assert stack.env(method="baseline")["SPECSTACK_SPEC_OVERRIDE"] == ""
    assert stack.env(method="ngram", k="")["SPECSTACK_SPEC_OVERRIDE"] == ""  # reproduce: the method's own K
    assert stack.env()["SPECSTACK_START_PERIOD"] == "900s" and "VLLM_PORT" not in stack.env()
    assert stack.env(Place("1", "0-3", slot=1, gpu_cpuset="8-15"))["VLLM_PORT"] == "8101"
    args = stack.collector_args(
        "ngram",
        "vllm-ngram",
        run_id="r",
        result="ngram",
        baseline_result="",
        k=None,
        reproduce_of="",
        allow_drift=False,
    )
    assert args[args.index("--k") + 1] == "3"


@pytest.mark.parametrize("platform, wait", [("gpu", "3600"), ("cpu", "600")])
def test_the_platform_decides_the_defaults(platform, wait):
    s = Settings(platform=platform, methods=MethodsToml.read(REPO / METHODS_TOML))
    assert s.wait == wait and s.lock == ("images.lock" if platform == "gpu" else "images.cpu.lock")
    assert s.report == ["", "--results", "/results", "--seal"]


def test_run_args_are_shell_words():
    stack = _stack(run_args="--concurrency 1,4 --workload 'my file.jsonl'", prefix_caching="1")
    args = stack.collector_args(
        "baseline",
        "vllm-baseline",
        run_id="r",
        result="baseline-slot1",
        baseline_result="",
        k=None,
        reproduce_of="",
        allow_drift=False,
    )
    assert args[-4:] == ["--concurrency", "1,4", "--workload", "my file.jsonl"]
    assert "--prefix-caching" in args and args[args.index("--bundle-name") + 1] == "baseline-slot1"


def test_an_unknown_knob_is_refused(capsys):
    assert cli.main(["compose", "status", "PLATFROM=cpu"]) == 2
    assert "unknown knob PLATFROM" in capsys.readouterr().err
    with pytest.raises(HostError, match="PLATFORM must be gpu"):
        cli._knobs([("PLATFORM", "tpu")])
