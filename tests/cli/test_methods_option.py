"""--methods of `specstack sweep` and `specstack slurm submit` (cli/options.py add_methods_option): left out, the
[sweep] methods of services/methods.toml, the one default list; its help says so and lists them."""

from __future__ import annotations

import argparse

import pytest

from specstack.cli import run, slurm
from specstack.cli.options import sweep_methods
from specstack.config import methods

from ..support import run_main

pytestmark = pytest.mark.unit

COMMANDS = [(run, ["sweep"]), (slurm, ["slurm", "submit"])]


def _parser(module) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    module.register(parser.add_subparsers())
    return parser


def _sub(parser: argparse.ArgumentParser, path: list[str]) -> argparse.ArgumentParser:
    for name in path:
        (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        parser = action.choices[name]
    return parser


@pytest.mark.parametrize("module, command", COMMANDS)
def test_the_default_is_the_sweep_table(module, command):
    args = _parser(module).parse_args(command)
    assert args.methods is None
    assert (
        sweep_methods(args) == ",".join(methods.default_sweep_methods()) == "baseline,ngram,draft_model,eagle3,suffix"
    )
    assert sweep_methods(_parser(module).parse_args([*command, "--methods", "ngram,baseline"])) == "ngram,baseline"


@pytest.mark.parametrize("module, command", COMMANDS)
def test_the_help_names_the_table_and_lists_it(module, command):
    text = " ".join(_sub(_parser(module), command).format_help().split())
    assert "(default: services/methods.toml's [sweep] methods, baseline,ngram,draft_model,eagle3,suffix)" in text


@pytest.mark.parametrize("command", [c for _, c in COMMANDS])
def test_a_bad_table_refuses_the_command_that_needs_it_naming_the_fix(command, capsys, monkeypatch, tmp_path):
    cfg = methods.load()
    monkeypatch.setattr(methods, "load", lambda: {**cfg, "sweep": {"methods": ["baseline", "medusa"]}})
    got = run_main(capsys, [*command, "--results", tmp_path / "results"])
    assert got.code == 2 and got.err.startswith("specstack: error: ")
    assert "[sweep] methods names 'medusa', which is no method of" in got.err and "fix the name or remove it" in got.err
    assert not (tmp_path / "results").exists()
    # the help of a command still prints, and says the default cannot be read
    text = " ".join(_sub(_parser(run), ["sweep"]).format_help().split())
    assert "[sweep] methods, which cannot be read: a sweep without --methods names why" in text
