"""K per load in the report (figures/k_per_load.py computes it; tests/figures/test_k_per_load.py its rules): the
report's table on a constructed bundle with a schedule run, and an unrun schedule as a recommendation."""

from __future__ import annotations

import json

import pytest

from specstack.figures import k_per_load as kpl
from specstack.report import build, render, sections
from tests.bundles import write_k_sweep, write_method

pytestmark = pytest.mark.unit


# --- the report on a constructed bundle -----------------------------------------------------------------------

# K -> concurrency -> tok/s: K=4 pays most alone, K=2 at c=4
SWEEP = {0: {1: 100, 4: 300}, 2: {1: 140, 4: 320}, 4: {1: 160, 4: 270}}


def _schedule_run(run_dir, sched: list, tputs: dict) -> None:
    d = write_method(
        run_dir,
        "ngram-kload",
        baseline="baseline",
        k=max(k for *_, k in sched),
        cells={("code", c): [(10.0, v, {})] * 3 for c, v in tputs.items()},
        texts={"code": {"a": ("t", "stop")}},
        base_method="ngram",
        spec_override=kpl.spec_override(sched),
    )
    s = json.loads((d / "summary.json").read_text())
    s["speculative_config"].update(kpl.spec_override(sched))  # as a real run records the merged config
    (d / "summary.json").write_text(json.dumps(s))


def test_the_report_shows_k_per_load_with_the_schedule_run_beside_the_best_fixed_k(tmp_path):
    run_dir = tmp_path / "kl"
    write_k_sweep(run_dir, SWEEP)
    _schedule_run(run_dir, [[1, 3, 4], [4, 4, 2]], {1: 158, 4: 318})
    rep = build.build(run_dir, with_plots=False)
    assert sorted({r["method"] for r in rep.ksweep}) == ["ngram-k2", "ngram-k4"]  # the schedule is no K of its own
    rows = rep.k_per_load
    assert [(r["concurrency"], r["band"], r["k"]) for r in rows] == [(1, "1–3", 4), (4, "4–4", 2)]
    one, four = rows
    assert one["schedule"] == json.dumps([[1, 3, 4], [4, 4, 2]]) and one["schedule_verdict"] == "a different K per load"
    assert one["best_fixed_k"] == 2 and one["best_fixed_k_speedup"] == pytest.approx(1.4)
    assert one["schedule_method"] == "ngram-kload" and one["schedule_speedup"] == pytest.approx(1.58)
    assert four["schedule_speedup"] == pytest.approx(318 / 300) and four["speedup"] == pytest.approx(320 / 300)
    md = render.render_markdown([b for f in sections.SECTIONS for b in f(rep)])
    assert "### K per load" in md and "ngram-kload 1.58×" in md
    assert "this schedule ran" in md


def test_an_unrun_schedule_is_a_recommendation_naming_the_override(tmp_path):
    run_dir = tmp_path / "kr"
    write_k_sweep(run_dir, SWEEP)
    rep = build.build(run_dir, with_plots=False)
    md = render.render_markdown([b for f in sections.SECTIONS for b in f(rep)])
    assert "vLLM 0.32.0 accepts it" in md and "--k-per-load" in md
    assert '"num_speculative_tokens_per_batch_size": [[1, 3, 4], [4, 4, 2]]' in md
