"""Every option and argument of every `specstack` command says what it is for in --help: the whole parser tree is
walked (each subcommand, each nested one), so an option added without help fails here, not in a user's terminal."""

from __future__ import annotations

import argparse

import pytest

from specstack.cli import preflight, probe_sampler
from specstack.cli.main import build_parser
from specstack.config import methods

pytestmark = pytest.mark.unit


def without_help(parser: argparse.ArgumentParser, path: str) -> list[str]:
    """'COMMAND PATH: OPTION' for each argument of the parser and its subparsers that has no help text. A help of
    argparse.SUPPRESS is a deliberate hidden option (a test hook), not a missing one."""
    missing = []
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        if isinstance(action, argparse._SubParsersAction):
            described = {a.dest: a.help for a in action._choices_actions}  # each subcommand's line in --help
            for name, sub in action.choices.items():
                if not (described.get(name) or "").strip():
                    missing.append(f"{path}: subcommand {name}")
                missing += without_help(sub, f"{path} {name}")
            continue
        name = "/".join(action.option_strings) or action.metavar or action.dest
        if action.help is None or not str(action.help).strip():
            missing.append(f"{path}: {name}")
    return missing


def test_every_option_of_every_command_has_help():
    assert without_help(build_parser(), "specstack") == []


@pytest.mark.parametrize("module", [preflight, probe_sampler])
def test_the_standalone_module_parsers_have_help_too(module):
    """`python3 -m specstack.cli.preflight` and `... probe_sampler` build their own parser from the same options."""
    parser = argparse.ArgumentParser()
    (module.add_arguments if module is preflight else module._add_arguments)(parser)
    assert without_help(parser, module.__name__) == []


def test_the_container_entrypoint_has_help_too():
    """services/serve_args.py, the vLLM container's entrypoint, loaded as the package loads it (config/methods.py)."""
    assert without_help(methods.serve_args.parser(), "serve_args.py") == []


def test_the_walk_finds_an_option_without_help_in_a_nested_subcommand():
    """The check can fail: an option without help two subcommands deep, and a subcommand without help, are named."""
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    outer = sub.add_parser("outer", help="has help")
    inner_sub = outer.add_subparsers()
    inner = inner_sub.add_parser("inner")
    inner.add_argument("--bare")
    inner.add_argument("--hidden", help=argparse.SUPPRESS)
    inner.add_argument("--fine", help="says what it does")
    assert without_help(parser, "x") == ["x outer: subcommand inner", "x outer inner: --bare"]
