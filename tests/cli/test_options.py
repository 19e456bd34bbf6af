"""The shared option groups: what a command line turns into (run, sweep, sweep-k)."""
from __future__ import annotations

import argparse

import pytest

from specstack.cli import run, sweep_k
from specstack.cli.options import options_from_args

pytestmark = pytest.mark.unit


def parse(module, argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    module.register(parser.add_subparsers())
    return parser.parse_args(argv)


def test_sweep_k_command_line():
    args = parse(sweep_k, ["sweep-k", "--method", "ngram", "--k", "1,2,3"])
    assert args.ks == "1,2,3" and args.concurrency == (1,) and not args.no_baseline
    args = parse(sweep_k, ["sweep-k", "--method", "ngram", "--k", "2", "--concurrency", "4"])
    assert args.concurrency == (4,)
    # its --k is the list of K, never the single-K shorthand of `run`
    assert options_from_args(args, "ngram").spec_override is None


def test_run_k_is_the_num_speculative_tokens_shorthand():
    args = parse(run, ["run", "--method", "ngram", "--k", "3", "--spec-override", '{"prompt_lookup_max": 2}'])
    opts = options_from_args(args, "ngram")
    assert opts.spec_override == {"prompt_lookup_max": 2, "num_speculative_tokens": 3}
    assert opts.concurrencies == (1, 8)
