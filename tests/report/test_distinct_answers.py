"""Issue 29 point 6: the number of distinct greedy answers stands beside every acceptance figure and equality
verdict (a constructed bundle: 4 requests, 2 distinct answers for the method, 3 for the baseline)."""

from __future__ import annotations

import pytest
from rich.console import Console

from specstack.report import build, console_table, render, sections
from tests.bundles import write_method

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


def test_distinct_answers_are_counted_per_task_and_shown(tmp_path):
    run_dir = tmp_path / "few"
    run_dir.mkdir()
    base_texts = {"code": {"a": ("x y", "length"), "b": ("x y", "length"), "c": ("x z", "length"), "d": ("q", "stop")}}
    spec_texts = {
        "code": {"a": ("x y", "length"), "b": ("x y", "length"), "c": ("x z", "length"), "d": ("x z", "stop")}
    }
    cells = {("code", 1): [(1.0, 100.0, {})]}
    write_method(run_dir, "baseline", baseline=None, k=None, cells=cells, texts=base_texts)
    write_method(
        run_dir,
        "ngram",
        baseline="baseline",
        cells={("code", 1): [(1.0, 100.0, {"acc_len": 2.0})]},
        texts=spec_texts,
        acceptance={"code": ACC},
    )
    rep = build.build(run_dir, with_plots=False)
    acc = {r["method"]: r["distinct_outputs"] for r in rep.acceptance}
    assert acc == {"baseline": 3, "ngram": 2}
    (eq,) = rep.equality_summary
    assert (eq["distinct_outputs"], eq["baseline_distinct_outputs"], eq["equal"]) == (2, 3, 3)
    md = render.render_markdown(sections.blocks(rep))
    assert "| 4 (2 distinct) |" in md and "| 2 / 3 |" in md
    out = Console(record=True, width=250)
    console_table.print_run(run_dir, out)
    text = out.export_text()
    # the console is read at a glance: the effective sample is report.md's, and the console says so
    assert "(2 distinct)" not in text and "distinct answers" in text and "report.md" in text
