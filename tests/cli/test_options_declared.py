"""Options declared once: each field's flag(...) metadata (runs/options.py) is its command-line option in run, sweep
and sweep-k (cli/options.py builds them). A field given on the command line lands in that field; a field left out
keeps the dataclass default; every option is listed by --help."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import pytest

from specstack.cli import demo, run, sweep_k, workloads
from specstack.cli.options import FLAGS, options_from_args
from specstack.config.serving import Platform, Runtime
from specstack.runs.options import Options

pytestmark = pytest.mark.unit

# The fields that are no option: set by the sweep for each method it runs, or worked out from other options.
NOT_OPTIONS = {"method", "rates_auto", "prometheus_scrape_seconds", "port_wait", "session", "sessions", "slot"}
RUN_ONLY, SWEEP_ONLY = {"bundle_name", "baseline_result"}, {"replicate"}

# For each option a value other than its default, and what the field then holds.
GIVEN = {
    "run_id": (["--run-id", "r1"], "r1"),
    "results_dir": (["--results", "/tmp/res"], Path("/tmp/res")),
    "runtime": (["--runtime", "url", "--url", "http://h:1"], Runtime.URL),
    "url": (["--url", "http://h:1"], "http://h:1"),
    "trust_server": (["--trust-server"], True),
    "model_set": (["--model-set", "tiny"], "tiny"),
    "platform": (["--platform", "cpu-native"], Platform.CPU_NATIVE),
    "models_dir": (["--models-dir", "/m"], "/m"),
    "port": (["--port", "8123"], 8123),
    "served_model_name": (["--served-model-name", "foo"], "foo"),
    "tasks": (["--tasks", "chat"], ("chat",)),
    "datasets": (["--dataset", "mt-bench", "--dataset", "humaneval"], ("mt-bench", "humaneval")),
    "turns": (["--turns", "2"], 2),
    "workload_files": (["--workload", "mine=p.jsonl,a.jsonl"], {"mine": (Path("p.jsonl"), Path("a.jsonl"))}),
    "num_prompts": (["--num-prompts", "5"], 5),
    "perf_output_len": (["--perf-output-len", "7"], 7),
    "acceptance_max_tokens": (["--acceptance-max-tokens", "9"], 9),
    "concurrencies": (["--concurrency", "1,4,16"], (1, 4, 16)),
    "request_rate": (["--request-rate", "2.5"], 2.5),
    "rates": (["--rates", "0.5,1"], (0.5, 1.0)),
    "burstiness": (["--burstiness", "0.5"], 0.5),
    "rates_max_concurrency": (["--rates-max-concurrency", "8"], 8),
    "capacity_share": (["--capacity", "0.9"], 0.9),
    "capacity_probes": (["--capacity-probes", "4"], 4),
    "capacity_resolution": (["--capacity-resolution", "0.1"], 0.1),
    "slo": (["--slo", "ttft:500,tpot:50"], {"ttft": 500.0, "tpot": 50.0}),
    "repeats": (["--repeats", "3"], 3),
    "warmup_requests": (["--warmup-requests", "0"], 0),
    "acceptance_concurrency": (["--acceptance-concurrency", "4"], 4),
    "temperatures": (["--temperatures", "0.6,1.0"], (0.6, 1.0)),
    "samples_per_prompt": (["--samples-per-prompt", "32"], 32),
    "spec_override": (["--spec-override", '{"prompt_lookup_max": 2}'], {"prompt_lookup_max": 2}),
    "prefix_caching": (["--prefix-caching"], True),
    "allow_mismatch": (["--allow-mismatch"], True),
    "allow_synthetic": (["--allow-synthetic"], True),
    "force": (["--force"], True),
    "ready_timeout": (["--ready-timeout", "12.5"], 12.5),
    "port_release_timeout": (["--port-release-timeout", "3"], 3.0),
    "request_timeout": (["--request-timeout", "40"], 40.0),
    "prometheus_targets": (["--prometheus-targets", "t.json"], Path("t.json")),
    "windows_port": (["--windows-port", "9999"], 9999),
    "prometheus_url": (["--prometheus-url", "http://p:9090"], "http://p:9090"),
    "skip_bench": (["--skip-bench"], True),
    "quiet_gap": (["--quiet-gap", "1.5"], 1.5),
    "bundle_name": (["--bundle-name", "ngram-slot1"], "ngram-slot1"),
    "baseline_result": (["--baseline-result", "baseline-slot1"], "baseline-slot1"),
    "replicate": (["--replicate", "sessions"], "sessions"),
}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser()
    sub = p.add_subparsers()
    for module in (run, sweep_k):
        module.register(sub)
    return p


def command(name: str) -> list[str]:
    return {
        "bundle_name": ["run", "--method", "ngram"],
        "baseline_result": ["run", "--method", "ngram"],
        "replicate": ["sweep", "--methods", "ngram"],
    }.get(name, ["run", "--method", "ngram"])


def test_every_field_is_an_option_or_said_not_to_be():
    """A new field decides: flag(...) metadata (an option), or a place in NOT_OPTIONS."""
    names = {f.name for f in dataclasses.fields(Options)}
    assert set(FLAGS) == names - NOT_OPTIONS
    assert set(GIVEN) == set(FLAGS)
    assert {n for n, (_, spec) in FLAGS.items() if not spec.shared} == RUN_ONLY | SWEEP_ONLY


@pytest.mark.parametrize("name", sorted(GIVEN))
def test_an_option_given_lands_in_its_field_and_nothing_else_moves(name, monkeypatch):
    for env in ("SPECSTACK_RESULTS", "SPECSTACK_MODEL_SET", "SPECSTACK_PLATFORM"):
        monkeypatch.delenv(env, raising=False)
    argv, expected = GIVEN[name]
    opts = options_from_args(parser().parse_args([*command(name), "--run-id", "r0", *argv]), "ngram")
    assert getattr(opts, name) == expected
    baseline = options_from_args(parser().parse_args([*command(name), "--run-id", "r0"]), "ngram")
    moved = {f.name for f in dataclasses.fields(Options) if getattr(opts, f.name) != getattr(baseline, f.name)}
    # --url implies the url runtime; a --dataset or --workload task is measured (tasks); --rates auto aside
    implied = {"url": {"runtime"}, "runtime": {"url"}, "datasets": {"tasks"}, "workload_files": {"tasks"}}
    assert moved == {name} | implied.get(name, set())


def test_left_out_every_option_is_the_field_default(monkeypatch):
    for env in ("SPECSTACK_RESULTS", "SPECSTACK_MODEL_SET", "SPECSTACK_PLATFORM"):
        monkeypatch.delenv(env, raising=False)
    for argv in (
        ["run", "--method", "ngram"],
        ["sweep", "--methods", "ngram"],
        ["sweep-k", "--method", "ngram", "--k", "1,2"],
    ):
        opts = options_from_args(parser().parse_args([*argv, "--run-id", "r0"]), "ngram")
        expected = Options(method="ngram", run_id="r0", concurrencies=(1,) if argv[0] == "sweep-k" else (1, 8))
        assert opts == expected  # sweep-k's one default of its own: concurrency 1


def test_environment_defaults(monkeypatch):
    monkeypatch.setenv("SPECSTACK_RESULTS", "/env/res")
    monkeypatch.setenv("SPECSTACK_MODEL_SET", "tiny")
    monkeypatch.setenv("SPECSTACK_PLATFORM", "cpu-native")
    opts = options_from_args(parser().parse_args(["run", "--method", "ngram"]), "ngram")
    assert (opts.results_dir, opts.model_set, opts.platform) == (Path("/env/res"), "tiny", Platform.CPU_NATIVE)


@pytest.mark.parametrize("cmd, own", [("run", RUN_ONLY), ("sweep", SWEEP_ONLY), ("sweep-k", set())])
def test_help_lists_every_option(cmd, own):
    p = parser()
    text = " ".join(p._subparsers._group_actions[0].choices[cmd].format_help().split())
    for name, (_, spec) in FLAGS.items():
        option = spec.option or f"--{name.replace('_', '-')}"
        assert (f"{option} " in text or f"{option}\n" in text) == (spec.shared or name in own), (cmd, option)


def test_the_commands_sharing_a_field_option_get_the_same_one():
    """demo (--dataset, --prefix-caching, --turns) and workloads (sizes, --dataset) take run's declarations."""
    p = argparse.ArgumentParser()
    sub = p.add_subparsers()
    for module in (run, demo, workloads):
        module.register(sub)
    helps = {cmd: sub.choices[cmd]._option_string_actions for cmd in ("run", "demo", "workloads")}
    for cmd, options in (
        ("demo", ("--dataset", "--prefix-caching", "--turns")),
        ("workloads", ("--num-prompts", "--perf-output-len", "--acceptance-max-tokens", "--dataset")),
    ):
        for option in options:
            mine, runs = helps[cmd][option], helps["run"][option]
            assert (mine.help, mine.default, mine.dest, mine.choices) == (
                runs.help,
                runs.default,
                runs.dest,
                runs.choices,
            ), (cmd, option)
