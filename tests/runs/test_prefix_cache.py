"""Prefix caching: the one override in serve_args (every method alike), the option on every run command and in
the recipe, a run id that keeps one setting, and the hit rate = Δ hits / Δ queries of constructed counter deltas
in the summary, the report's rows and the console table."""

from __future__ import annotations

import argparse
import json

import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest
from rich.console import Console

from specstack.cli import demo, run, sweep_k
from specstack.cli.options import options_from_args
from specstack.config import methods
from specstack.config import metric_names as m
from specstack.errors import UserError
from specstack.figures import prefix_cache as cache_figures
from specstack.measure import snapshots
from specstack.report import console_table
from specstack.report.prefix_cache import prefix_cache_rows, rate_text
from specstack.results.bundle import MethodBundle, update_manifest
from specstack.results.reader import load_run
from specstack.results.summary import Summary
from specstack.runs import prefix_cache, recipe
from specstack.runs.options import Options, plan_for

pytestmark = pytest.mark.unit

ON, OFF = "--enable-prefix-caching", "--no-enable-prefix-caching"


# --- serve_args: one override, every method alike -------------------------------------------------------


@pytest.mark.parametrize("method", methods.names())
@pytest.mark.parametrize("platform", ["gpu-native", "gpu-container", "cpu-native"])
def test_every_method_gets_the_flag_with_the_option_and_the_no_flag_without(method, platform):
    with_it = methods.build(method, platform=platform, prefix_caching=True).argv
    without = methods.build(method, platform=platform).argv
    assert ON in with_it and OFF not in with_it
    assert OFF in without and ON not in without
    # nothing else changes
    assert [a for a in with_it if a != ON] == [a for a in without if a != OFF]


def test_the_override_is_off_too_and_a_method_table_may_not_set_the_key():
    assert OFF in methods.build("ngram", prefix_caching=False).argv
    cfg = methods.load()
    cfg["methods"]["ngram"]["flags"] = {"enable-prefix-caching": True}
    with pytest.raises(methods.MethodError, match=r"\[methods.ngram.flags\] sets enable-prefix-caching.*\[common\]"):
        methods.build("ngram", cfg=cfg)
    cfg = methods.load()
    cfg["platforms"]["cpu-native"]["enable-prefix-caching"] = True
    with pytest.raises(methods.MethodError, match=r"\[platforms.cpu-native\]"):
        methods.build("ngram", platform="cpu-native", cfg=cfg)


@pytest.mark.parametrize("text,value", [("1", True), ("0", False), ("", None), (None, None), (" 1 ", True)])
def test_env_values(text, value):
    assert methods.serve_args.prefix_caching_value(text) is value


def test_a_bad_env_value_names_the_choices():
    with pytest.raises(methods.MethodError, match="must be 1 .* 0 .* or empty.*'yes'"):
        methods.serve_args.prefix_caching_value("yes")


def test_the_container_entry_point_reads_the_env_var(monkeypatch, capsys):
    monkeypatch.setenv(methods.serve_args.PREFIX_CACHING_ENV, "1")
    assert methods.serve_args.main(["--method", "eagle3", "--platform", "gpu-container", "--print"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan == methods.build("eagle3", platform="gpu-container", prefix_caching=True).to_json()
    monkeypatch.setenv(methods.serve_args.PREFIX_CACHING_ENV, "on")
    assert methods.serve_args.main(["--method", "eagle3", "--print"]) == 2
    assert "SPECSTACK_PREFIX_CACHING" in capsys.readouterr().err


# --- the option: run, sweep, sweep-k, demo; the recipe --------------------------------------------------


def parse(module, argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    module.register(parser.add_subparsers())
    return parser.parse_args(argv)


@pytest.mark.parametrize(
    "module,argv",
    [(run, ["run", "--method", "ngram"]), (run, ["sweep"]), (sweep_k, ["sweep-k", "--method", "ngram", "--k", "1,2"])],
)
def test_run_commands_take_the_option(module, argv):
    assert options_from_args(parse(module, argv + ["--prefix-caching"]), "ngram").prefix_caching is True
    assert options_from_args(parse(module, argv), "ngram").prefix_caching is False


def test_demo_takes_the_option():
    assert parse(demo, ["demo", "--prefix-caching"]).prefix_caching is True
    assert parse(demo, ["demo"]).prefix_caching is False


def test_the_plan_and_the_recipe_carry_it(tmp_path):
    opts = Options(method="draft_model", run_id="r", results_dir=tmp_path, prefix_caching=True)
    assert ON in plan_for(opts).argv
    assert OFF in plan_for(Options(method="draft_model", run_id="r")).argv
    rec = recipe.record(opts, tmp_path / "r")
    assert rec["prefix_caching"] is True
    assert recipe.options(rec, run_id="again", results_dir=tmp_path, run_dir=tmp_path / "r").prefix_caching is True


# --- a run id keeps one setting ---------------------------------------------------------------------------


def test_resuming_or_extending_a_run_with_the_other_setting_is_refused(tmp_path):
    run_dir = tmp_path / "r"
    prefix_cache.check_same_setting("r", run_dir, True)  # nothing started yet: any setting
    update_manifest(run_dir, reproduction_of={"run_id": "x"})  # a reproduction's manifest, before any method
    prefix_cache.check_same_setting("r", run_dir, True)
    update_manifest(run_dir, recipe=recipe.record(Options(method="baseline", run_id="r"), run_dir))
    prefix_cache.check_same_setting("r", run_dir, False)
    with pytest.raises(UserError, match="started without --prefix-caching.*Drop --prefix-caching.*new --run-id"):
        prefix_cache.check_same_setting("r", run_dir, True)
    update_manifest(
        run_dir, recipe={**recipe.record(Options(method="baseline", run_id="r"), run_dir), "prefix_caching": True}
    )
    with pytest.raises(UserError, match="started with --prefix-caching.*Add --prefix-caching"):
        prefix_cache.check_same_setting("r", run_dir, False)


def test_a_recipe_recorded_before_the_option_counts_as_off(tmp_path):
    rec = recipe.record(Options(method="baseline", run_id="r"), tmp_path)
    del rec["prefix_caching"]
    update_manifest(tmp_path, recipe=rec)
    assert prefix_cache.recorded_setting(tmp_path) is False


# --- the counters in a window's snapshots (the hit rate itself: tests/figures/test_prefix_cache.py) ------------


def _page(queries: float, hits: float, caching: str = "True") -> str:
    """A /metrics page shaped like vLLM's, rendered by prometheus_client (two engines: summed)."""
    reg = CollectorRegistry()
    Gauge("vllm:cache_config_info", "c", ["engine", "block_size", "enable_prefix_caching"], registry=reg).labels(
        "0", "16", caching
    ).set(1)
    q = Counter(m.PREFIX_CACHE_QUERIES, "q", ["model_name", "engine"], registry=reg)
    h = Counter(m.PREFIX_CACHE_HITS, "h", ["model_name", "engine"], registry=reg)
    for engine, share in (("0", 0.75), ("1", 0.25)):
        q.labels("m", engine).inc(queries * share)
        h.labels("m", engine).inc(hits * share)
    return generate_latest(reg).decode()


def test_snapshots_keep_the_two_counters_and_diff_them():
    before, after = snapshots.parse(_page(1000, 200), 1.0), snapshots.parse(_page(1600, 350), 2.0)
    delta = snapshots.diff(before, after)
    assert (delta.get(m.PREFIX_CACHE_QUERIES), delta.get(m.PREFIX_CACHE_HITS)) == (600, 150)
    assert cache_figures.figures(delta.counters)["hit_rate"] == 0.25
    assert before.cache_config["enable_prefix_caching"] == "True"


def _window(name, phase, queries, hits, **kw):
    return {
        "name": name,
        "phase": phase,
        "counters": {"counters": {m.PREFIX_CACHE_QUERIES: float(queries), m.PREFIX_CACHE_HITS: float(hits)}},
        **kw,
    }


def constructed_summary(caching: bool = True) -> dict:
    q = 1 if caching else 0
    return {
        "prefix_caching": {"option": caching, "serve_flag": caching, "observed": None},
        "windows": [
            _window("warmup", "warmup", 50 * q, 0),
            _window("acceptance/code", "acceptance", 800 * q, 200 * q, task="code"),
            _window("sampled/code/t0.6", "sampled", 800 * q, 600 * q, task="code"),
            _window("bench/code-c1-r0", "bench", 1000 * q, 900 * q, task="code", concurrency=1, repeat=0),
            _window("bench/code-c1-r1", "bench", 1000 * q, 500 * q, task="code", concurrency=1, repeat=1),
            {"name": "bench/code-c4-r0", "phase": "bench", "counters": {}, "status": "failed"},
        ],
        "tasks": {
            "code": {
                "bench": [
                    {"concurrency": 1, "repeat": 0},
                    {"concurrency": 1, "repeat": 1},
                    {"concurrency": 4, "repeat": 0},
                ],
                "sampled": {"0.6": {"temperature": 0.6}},
            }
        },
    }


def test_the_summary_has_it_per_window_task_sampled_phase_and_bench_cell(tmp_path):
    (tmp_path / "snapshots").mkdir()
    (tmp_path / "snapshots" / "warmup.before.prom").write_text(_page(0, 0))
    summary = constructed_summary()
    summary = prefix_cache.add_to_summary(Summary.of(summary), tmp_path).to_json()
    assert [w["prefix_cache"]["hit_rate"] for w in summary["windows"]] == [0.0, 0.25, 0.75, 0.9, 0.5, None]
    task = summary["tasks"]["code"]
    assert task["prefix_cache"] == {"queries": 800, "hits": 200, "hit_rate": 0.25}
    assert [c["prefix_cache"]["hit_rate"] for c in task["bench"]] == [0.9, 0.5, None]
    assert task["sampled"]["0.6"]["prefix_cache"]["hit_rate"] == 0.75
    assert summary["prefix_caching"]["observed"] is True and cache_figures.enabled(summary) is True


def test_caching_off_gives_n_a_never_zero(tmp_path):
    summary = constructed_summary(caching=False)
    # no snapshot file: observed unknown, the plan's flag stands
    summary = prefix_cache.add_to_summary(Summary.of(summary), tmp_path).to_json()
    assert summary["tasks"]["code"]["prefix_cache"] == {"queries": 0, "hits": 0, "hit_rate": None}
    assert rate_text(summary["tasks"]["code"]["prefix_cache"]) == "n/a (no queries)"
    assert rate_text({"queries": None}) == "n/a"
    assert rate_text({"queries": 400, "hits": 96, "hit_rate": 0.24}) == "24.0 % (96 / 400)"
    assert cache_figures.enabled(summary) is False


# --- the report's rows and the console table ---------------------------------------------------------------


def _publish(results, run_id: str, method: str, caching: bool, tmp_path) -> None:
    s = constructed_summary(caching)
    s = prefix_cache.add_to_summary(Summary.of(s), tmp_path / "none").to_json()
    s.update(
        {
            "schema": "specstack.summary/1",
            "method": method,
            "status": "ok",
            "error": None,
            "baseline_method": None if method == "baseline" else "baseline",
            "speculative_config": None if method == "baseline" else {"num_speculative_tokens": 4},
            "crosscheck": {"ok": True, "checks": 1, "mismatches": []},
        }
    )
    s["tasks"]["code"].update({"acceptance_rate": 0.5, "mean_acceptance_length": 2.0, "histogram": [1, 1]})
    bundle = MethodBundle(results, run_id, method)
    bundle.write_json("summary.json", s)
    folder = bundle.finalize(True)
    update_manifest(results / run_id, methods={method: {"status": "ok", "dir": folder.name, "error": None}})


@pytest.mark.parametrize("caching", [True, False])
def test_rows_and_console_table(tmp_path, caching):
    for method in ("baseline", "eagle3"):
        _publish(tmp_path, "r", method, caching, tmp_path)
    rows = prefix_cache_rows(load_run(tmp_path / "r"))
    bench = [r for r in rows if r["method"] == "eagle3" and r["phase"] == "bench"]
    assert [(r["concurrency"], r["hit_rate"]) for r in bench] == (
        [(1, 0.7), (4, None)] if caching else [(1, None), (4, None)]
    )
    console = Console(width=200, record=True)
    console_table.print_run(tmp_path / "r", console)
    text = console.export_text()
    assert ("prefix cache hit rate" in text) is caching
    if caching:
        assert "25.0 % (200 / 800)" in text and "70.0 % (1,400 / 2,000)" in text


def test_a_sweep_with_the_other_setting_is_refused_before_it_skips_or_runs_anything(tmp_path):
    from specstack.pipeline.sweep import run_all

    opts = Options(method="baseline", run_id="r", results_dir=tmp_path)
    update_manifest(tmp_path / "r", recipe=recipe.record(opts, tmp_path / "r"))
    with pytest.raises(UserError, match="started without --prefix-caching"):
        run_all(Options(method="baseline", run_id="r", results_dir=tmp_path, prefix_caching=True), [], report=False)


def test_the_drift_check_replays_the_setting_and_names_a_change(tmp_path):
    """reproduce builds each method's plan from the recipe: a cached run's argv matches itself; a recorded argv
    without caching against a replay with it is named flag by flag."""
    from specstack.runs import drift
    from specstack.server import model_identity

    models = tmp_path / "models"
    (models / "tiny-qwen3").mkdir(parents=True)
    (models / "tiny-qwen3" / "config.json").write_text("{}")
    opts = Options(
        method="ngram", run_id="x", model_set="tiny", platform="cpu-native", models_dir=str(models), prefix_caching=True
    )
    plan = plan_for(opts)
    summary = {
        "asked_for": {"argv": plan.argv, "env": plan.env},
        "provenance": {"models": model_identity.of_plan(plan)},
    }
    replayed = recipe.options(recipe.record(opts, tmp_path), run_id="y", results_dir=tmp_path, run_dir=tmp_path)
    assert drift.method("ngram", summary, Options(**{**vars(replayed), "method": "ngram"})) == ([], [])
    off = plan_for(Options(method="ngram", run_id="x", model_set="tiny", platform="cpu-native", models_dir=str(models)))
    (d,), _ = drift.method("ngram", {**summary, "asked_for": {"argv": off.argv, "env": off.env}}, opts)
    assert "--enable-prefix-caching absent → True" in d.now and "--no-enable-prefix-caching True → absent" in d.now
