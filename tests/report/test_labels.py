"""Issue 29 point 8: labels that say what the figures are: finish reasons per target model (never pooled across two
targets), every acceptance rate of a summary a fraction, bench's per-second request count under a name that says
so, the verdict intro promising intervals only where a cell has them, the README naming the current schema."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from specstack.figures.bench_cell import cell_figures as _bench_cell
from specstack.report import build, console_table, render, sections, speed_sections
from specstack.results.bundle import SUMMARY_SCHEMA
from tests.bundles import bench_json, step_figures, write_method

pytestmark = pytest.mark.unit

ACC = {
    "acceptance_rate": 0.5,
    "mean_acceptance_length": 3.0,
    "histogram": [2, 1, 1, 0, 4],
    "per_position": [0.75, 0.625, 0.5, 0.5],
    "no_accept_share": 0.25,
    "num_spec_steps": 8,
    "num_draft_tokens": 32,
    "num_accepted_draft_tokens": 16,
}
ROOT = Path(__file__).resolve().parents[2]


def test_finish_reasons_are_counted_per_target_model(tmp_path):
    run_dir = tmp_path / "two"
    run_dir.mkdir()
    cells = {("chat", 1): [(1.0, 100.0, {})]}
    spec = {("chat", 1): [(1.0, 100.0, {"acc_len": 2.0})]}
    qwen, mimo = {"target": "/models/tiny-qwen3"}, {"target": "/models/tiny-mimo"}
    for name, base, server, reasons in (
        ("baseline", None, qwen, ("length", "stop")),
        ("ngram", "baseline", qwen, ("length", "length")),
        ("mtp-baseline", None, mimo, ("stop", "stop")),
        ("mtp", "mtp-baseline", mimo, ("stop", "stop")),
    ):
        texts = {"chat": {"a": ("t", reasons[0]), "b": ("u", reasons[1])}}  # how each answer ended
        write_method(
            run_dir,
            name,
            baseline=base,
            k=None if base is None else 1,
            cells=spec if base else cells,
            texts=texts,
            server=server,
            acceptance={"chat": ACC} if base else None,
        )
    rep = build.build(run_dir, with_plots=False)
    md = render.render_markdown(sections.blocks(rep))
    # each target's count sums its methods' answers, and the heading says so ("3 of 4" is 2 methods × 2)
    assert (
        "Acceptance (acceptance phase, greedy; target tiny-qwen3: answers ended by length 3 of 4, stop 1 of 4 "
        "(2 methods × 2 answers, pooled); target tiny-mimo: every answer ended at EOS (2 methods × 2 answers, "
        "pooled))"
    ) in md
    out = Console(record=True, width=250)
    console_table.print_run(run_dir, out)
    assert (
        "task: chat (acceptance answers ended by: tiny-qwen3: length 3, stop 1 (2 methods × 2 answers, "
        "pooled); tiny-mimo: stop 4 (2 methods × 2 answers, pooled))"
    ) in out.export_text()


def test_a_summary_keeps_every_rate_a_fraction_and_names_bench_s_per_second_count():
    bench = {**bench_json(1.0, 100.0, acc_len=2.0), "max_concurrent_requests": 8}
    cell = _bench_cell(bench, None, 4)
    assert cell["acceptance_rate"] == pytest.approx(0.5) and "spec_decode_acceptance_rate" not in cell
    assert cell["max_requests_active_in_one_second"] == 8 and "max_concurrent_requests" not in cell


def test_the_readme_names_the_summary_schema_this_code_writes():
    readme = (ROOT / "README.md").read_text()
    assert f"`{SUMMARY_SCHEMA}`" in readme


def test_the_methods_table_says_how_each_server_fact_is_known(tmp_path):
    """Issue 29 point 7: observed, inferred or asked, from the summary's server.evidence."""
    run_dir = tmp_path / "prov"
    run_dir.mkdir()
    evidence = {
        "model_runner": {"basis": "inferred", "line": "KV cache size: 1 tokens"},
        "async_scheduling": {"basis": "asked", "line": "non-default args: {...}"},
    }
    write_method(
        run_dir,
        "baseline",
        baseline=None,
        k=None,
        cells={("code", 1): [(1.0, 100.0, {})]},
        texts={"code": {"a": ("t", "stop")}},
        server={"evidence": evidence},
    )
    write_method(
        run_dir,
        "old",
        baseline=None,
        k=None,
        cells={("code", 1): [(1.0, 100.0, {})]},
        texts={"code": {"a": ("t", "stop")}},
    )  # a bundle from before: no evidence recorded
    rep = build.build(run_dir, with_plots=False)
    md = render.render_markdown(sections.blocks(rep))
    rows = {r["method"]: r for r in rep.methods}
    assert (rows["baseline"]["model_runner_basis"], rows["old"]["model_runner_basis"]) == ("inferred", None)
    assert "| V1 (inferred) | no (asked) |" in md and "| V1 | no |" in md
    assert "inferred = read from what the log does not say" in md


def _one_target_run(run_dir: Path, repeats: int) -> None:
    run_dir.mkdir()
    texts = {"chat": {"a": ("t", "stop")}}
    write_method(
        run_dir,
        "baseline",
        baseline=None,
        k=None,
        texts=texts,
        cells={("chat", c): [(2.0, 100.0 + r, {}) for r in range(repeats)] for c in (1, 4)},
    )
    write_method(
        run_dir,
        "ngram",
        baseline="baseline",
        texts=texts,
        acceptance={"chat": ACC},
        cells={("chat", c): [(1.5, 120.0 + r, {"acc_len": 2.0}) for r in range(repeats)] for c in (1, 4)},
    )


def test_a_one_repeat_run_promises_no_interval_bar_no_median_over_repeats_and_no_mark_it_lacks(tmp_path):
    """Audit of round 2: the captions promised "95 % bootstrap interval bars" and "median over repeats" in a
    1-repeat run, and a square for E2EL points where every point was TPOT."""
    _one_target_run(tmp_path / "one", repeats=1)
    rep = build.build(tmp_path / "one", with_plots=True)
    md = render.render_markdown(sections.blocks(rep))
    [caption] = [c for n, c in rep.plot_captions.items() if "speedup_vs_concurrency" in n]
    assert "hollow marker = no interval" in caption
    assert "bars = 95 %" not in caption and "square" not in caption
    assert "median over repeats" not in md and "Latency percentiles, ms (p50 / p95 / p99; one repeat)" in md
    assert _row(rep.speed, "ngram", 1)["latency_statistic"] == "p50 over requests, one repeat"

    _one_target_run(tmp_path / "three", repeats=3)
    rep = build.build(tmp_path / "three", with_plots=True)
    md = render.render_markdown(sections.blocks(rep))
    [caption] = [c for n, c in rep.plot_captions.items() if "speedup_vs_concurrency" in n]
    assert "bars = 95 % bootstrap interval" in caption and "hollow" not in caption
    assert "Latency percentiles, ms (p50 / p95 / p99; median over repeats)" in md
    assert _row(rep.speed, "ngram", 1)["latency_statistic"] == "p50 over requests, median over repeats"


def test_the_crossover_names_the_statistic_each_concurrency_was_judged_on(tmp_path):
    """Audit of round 2: the crossover's "TPOT" column rested on E2EL. Burst-read TPOTs at c=4 only (the aggregate
    rule of a bundle without per-request data: TPOT × tokens under a tenth of E2EL): c=1 on TPOT, c=4 on E2EL."""
    run_dir = tmp_path / "mixed"
    run_dir.mkdir()
    texts = {"chat": {"a": ("t", "stop")}}
    write_method(
        run_dir,
        "baseline",
        baseline=None,
        k=None,
        texts=texts,
        cells={("chat", 1): [(2.0, 100.0, {})], ("chat", 4): [(0.001, 300.0, {})]},
    )
    write_method(
        run_dir,
        "ngram",
        baseline="baseline",
        texts=texts,
        acceptance={"chat": ACC},
        cells={("chat", 1): [(1.5, 120.0, {"acc_len": 2.0})], ("chat", 4): [(1.5, 320.0, {"acc_len": 2.0})]},
    )
    rep = build.build(run_dir, with_plots=False)
    assert [_row(rep.speed, "ngram", c)["latency_basis"] for c in (1, 4)] == ["TPOT", "E2EL"]
    [cross] = [r for r in rep.crossover if r["method"] == "ngram"]
    assert cross["latency_basis"] == "TPOT, E2EL at c=4"
    assert cross["tpot_text"].endswith("(on E2EL at c=4: TPOT degenerate there)")
    md = render.render_markdown(sections.blocks(rep))
    assert "| method | vs | latency (TPOT; E2EL where TPOT is degenerate) | throughput |" in md


def test_the_verdict_legend_and_the_position_captions_name_only_what_the_run_shows(tmp_path):
    """Audit of round 2, second recompute: the verdict legend listed "⚠ stall", "⚠ unstable repeats", "⚠ not
    comparable" and the verdicts of intervals in a 1-repeat run without any, and every per-position caption
    explained a × that only suffix's plot drew."""
    run_dir = tmp_path / "one"
    run_dir.mkdir()
    texts = {"chat": {"a": ("t", "stop")}}
    write_method(run_dir, "baseline", baseline=None, k=None, texts=texts, cells={("chat", 1): [(2.0, 100.0, {})]})
    # every position drafted by some step: the conditional panel has a rate at each, so no ×
    write_method(
        run_dir,
        "ngram",
        baseline="baseline",
        texts=texts,
        acceptance={"chat": step_figures([4, 4, 4, 4, 3, 2, 1, 1], [4, 4, 4, 4, 2, 1, 0, 0])},
        cells={("chat", 1): [(1.5, 120.0, {"acc_len": 2.0})]},
    )
    rep = build.build(run_dir, with_plots=True)
    md = render.render_markdown(sections.blocks(rep))
    assert "- point only: fewer than" in md and "- ⚠ single measurement: one repeat on a side" in md
    for absent in (
        "- helped:",
        "- slower:",
        "- no clear difference:",
        "- ⚠ stall:",
        "- ⚠ unstable repeats:",
        "- ⚠ not comparable:",
        "- ⚠ --trust-server:",
        "- ⚠ busy host:",
        "- The latency is TPOT;",
    ):
        assert absent not in md, absent
    [caption] = [c for n, c in rep.plot_captions.items() if "acceptance_by_position" in n]
    assert "right: as a share of the steps that drafted at least p+1 tokens" in caption and "×" not in caption
    # a position no step drafted that far: the plot draws its ×, and the caption says what it is
    write_method(
        run_dir,
        "ngram",
        baseline="baseline",
        texts=texts,
        acceptance={"chat": step_figures([3, 3, 3, 3, 3, 2, 1, 1], [3, 3, 3, 3, 2, 1, 0, 0])},
        cells={("chat", 1): [(1.5, 120.0, {"acc_len": 2.0})]},
    )
    rep = build.build(run_dir, with_plots=True)
    [caption] = [c for n, c in rep.plot_captions.items() if "acceptance_by_position" in n]
    assert "× = no step drafted that far (no rate, not 0)" in caption


def test_the_per_verify_step_efficiency_is_shown_only_where_the_drafter_skipped_passes():
    """At 100 % drafted the two bounds differ only by drafts vLLM counted past an answer's end (seen: draft_model
    28 % against 27 % per verify step), which the per-step figure would count as a gain."""
    row = {"efficiency": 0.28, "efficiency_verify_steps": 0.27}
    assert speed_sections._efficiency({**row, "drafting_share": 1.0}) == "28 %"
    assert speed_sections._efficiency({**row, "drafting_share": 0.36}) == "28 % (27 % per verify step)"


def _row(rows: list[dict], method: str, concurrency: int) -> dict:
    [row] = [r for r in rows if r["method"] == method and r["concurrency"] == concurrency]
    return row
