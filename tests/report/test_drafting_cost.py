"""The speed section's cost of drafting per target pass (report/drafting_cost.py), exact on a built bundle."""

from __future__ import annotations

import pytest

from specstack.report import build, render, sections, tables
from tests.bundles import write_method

pytestmark = pytest.mark.unit


def _run(tmp_path, method_tpot: float, *, degenerate: bool = False):
    run_dir = tmp_path / "cost"
    run_dir.mkdir(parents=True)
    # 4 answers of 101 tokens: 400 decode tokens; the method's passes: 400 − 200 accepted = 200 (100 drafted)
    base = {("code", 1): [(10.0, 100.0, {"completed": 4, "out_tokens": 404})] * 3}
    extra = {"completed": 4, "out_tokens": 404, "acc_len": 3.0, "drafts": 100, "accepted": 200}
    if degenerate:  # a burst read: TPOT × (tokens − 1) under a tenth of E2EL (the aggregate rule)
        extra["e2el"] = 10_000.0
    spec = {("code", 1): [(method_tpot, 150.0, extra)] * 3}
    write_method(run_dir, "baseline", baseline=None, k=None, cells=base, texts={"code": {"a": ("t", "stop")}})
    write_method(run_dir, "ngram", baseline="baseline", cells=spec, texts={"code": {"a": ("t", "stop")}})
    return build.build(run_dir, with_plots=False)


def test_the_cost_per_pass_is_exact_and_named_in_the_speed_section(tmp_path):
    rep = _run(tmp_path, 8.0)
    row = next(r for r in rep.speed if r["method"] == "ngram")
    base = next(r for r in rep.speed if r["method"] == "baseline")
    assert row["tokens_per_target_pass"] == 2.0  # 400 decode tokens ÷ 200 passes
    assert row["free_drafting_tpot_ms"] == 10.0 / 2.0  # the baseline's TPOT ÷ 2
    assert row["pass_ms"] == 8.0 * 2.0  # one pass emitted 2 tokens at 8 ms each
    assert row["drafting_cost_ms_per_pass"] == 16.0 - 10.0 and row["drafting_cost_share"] == 0.6
    assert all(base[f] is None for f in ("free_drafting_tpot_ms", "pass_ms", "drafting_cost_ms_per_pass"))
    md = render.render_markdown(sections.blocks(rep))
    assert "### Cost of drafting per target pass (perf phase)" in md
    assert "| ngram | 1 | 8.00 | 10.00 | 2.00 (50 %) | 5.00 | 16.00 | 6.00 | 60 % |" in md
    assert "ngram at c=1: drafting costs 6.00 ms a pass on this target (60 % of a plain decode step)" in md
    csv, _ = tables.table_bytes("speed", rep.speed)
    assert b"drafting_cost_ms_per_pass" in csv.splitlines()[0]


def test_a_method_at_its_bound_costs_nothing_and_a_degenerate_tpot_has_no_cost(tmp_path):
    row = next(r for r in _run(tmp_path / "a", 5.0).speed if r["method"] == "ngram")
    assert row["drafting_cost_ms_per_pass"] == 0.0
    rep = _run(tmp_path / "b", 8.0, degenerate=True)
    row = next(r for r in rep.speed if r["method"] == "ngram")
    assert row["tpot_degenerate"] and row["drafting_cost_ms_per_pass"] is None
    assert "Cost of drafting per target pass" not in render.render_markdown(sections.blocks(rep))
