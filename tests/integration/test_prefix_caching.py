"""`specstack run --method ngram --prefix-caching` on real vLLM (CPU, tiny models): the server is started with
--enable-prefix-caching and says so on /metrics, every window's hit rate is Δ hits / Δ queries of its own raw
counters, the tables show it, and the run id keeps its setting."""

from __future__ import annotations

import pytest
from rich.console import Console

from specstack.cli.main import main
from specstack.config import metric_names as m
from specstack.report import console_table
from specstack.report.build import build
from specstack.report.prefix_cache import prefix_cache_table

from .conftest import mt_bench_args

pytestmark = pytest.mark.integration

RUN_ID = "it-mt-bench"
TASK = "mt-bench"


@pytest.fixture(scope="module")
def cached_run(mt_bench_run):
    """The shared MT-Bench run (conftest), served with --prefix-caching."""
    return mt_bench_run


def test_the_server_ran_with_prefix_caching(cached_run):
    summary = cached_run["summary"]
    assert "--enable-prefix-caching" in summary["server"]["argv"]
    assert "--no-enable-prefix-caching" not in summary["server"]["argv"]
    assert summary["prefix_caching"] == {"option": True, "serve_flag": True, "observed": True}


def test_hit_rate_is_delta_hits_over_delta_queries_of_each_window(cached_run):
    summary = cached_run["summary"]
    for w in summary["windows"]:
        before, after = w["counters_before"], w["counters_after"]
        queries = after[m.PREFIX_CACHE_QUERIES] - before[m.PREFIX_CACHE_QUERIES]
        hits = after[m.PREFIX_CACHE_HITS] - before[m.PREFIX_CACHE_HITS]
        assert queries > 0, w["name"]
        assert w["prefix_cache"] == {"queries": queries, "hits": hits, "hit_rate": hits / queries}, w["name"]
    task = summary["tasks"][TASK]
    (acceptance,) = [w for w in summary["windows"] if w["name"] == f"acceptance/{TASK}"]
    assert task["prefix_cache"] == acceptance["prefix_cache"]
    assert [c["prefix_cache"] for c in task["bench"]] == [
        w["prefix_cache"] for w in summary["windows"] if w["phase"] == "bench"
    ]
    table = (cached_run["results"] / RUN_ID / "ngram" / "tables" / "windows.csv").read_text().splitlines()
    assert "prefix_cache_hit_rate" in table[0].split(",")


def test_the_report_and_the_console_show_it(cached_run):
    run_dir = cached_run["results"] / RUN_ID
    rep = build(run_dir, with_plots=False)
    blocks = prefix_cache_table(rep, TASK)
    assert blocks and blocks[1][2][0][1] == "on"
    assert {r["phase"] for r in rep.prefix_cache} == {"acceptance", "bench"}
    console = Console(record=True, width=200)
    console_table.print_run(run_dir, console)
    assert f"{TASK}: prefix cache hit rate" in console.export_text()


def test_the_run_id_keeps_its_setting(cached_run, models_dir, capsys):
    assert main(mt_bench_args(models_dir, cached_run["results"], "--force")) == 2  # refused before any server starts
    assert "was started with --prefix-caching" in capsys.readouterr().err
