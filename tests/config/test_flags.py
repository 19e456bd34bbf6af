"""The serve plan's options (config/flags.py) are declared once: `specstack run` (built from Options' fields) and
preflight's own parser (`python3 -m specstack.cli.preflight`, in a server image) have the same --model-set,
--platform and --models-dir, help, default and environment variable alike."""

from __future__ import annotations

import argparse

import pytest

from specstack.cli import preflight
from specstack.cli.main import build_parser
from specstack.config.flags import PLAN
from specstack.runs.options import Options

pytestmark = pytest.mark.unit

OPTIONS = ("--model-set", "--platform", "--models-dir")


def _actions(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {s: a for a in parser._actions for s in a.option_strings if s in OPTIONS}


def _run_parser() -> argparse.ArgumentParser:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices["run"]


def _preflight_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser()
    preflight.add_arguments(p)
    return p


def test_preflight_and_run_have_the_same_plan_options():
    run, pre = _actions(_run_parser()), _actions(_preflight_parser())
    assert set(run) == set(pre) == set(OPTIONS)
    for option in OPTIONS:
        a, b = run[option], pre[option]
        assert (a.dest, a.help, a.default, a.type) == (b.dest, b.help, b.default, b.type), option


def test_options_fields_take_the_plan_defaults():
    opts = Options(method="baseline", run_id="x")
    assert [getattr(opts, name) for name in PLAN] == [default for _, default in PLAN.values()]


def test_the_environment_sets_preflights_defaults(monkeypatch):
    """The server container passes the model set and platform as environment variables (make run)."""
    monkeypatch.setenv("SPECSTACK_MODEL_SET", "smollm2")
    monkeypatch.setenv("SPECSTACK_PLATFORM", "cpu-native")
    args = _preflight_parser().parse_args(["--method", "ngram"])
    assert (args.model_set, args.platform, args.models_dir) == ("smollm2", "cpu-native", None)
