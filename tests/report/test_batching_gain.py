"""Cells a careful reviewer would not sign, named (issue 41 points 1 and 6). Point 6: the worst result looked clean. eagle3 chat c=4 read 0.16× with no mark, while its own
throughput at c=4 was 1.04× its c=1 (the server did not batch, or the client starved it): a c > 1 cell whose side
gained nothing from the concurrency is named in the speed table's note, the verdict matrix and speed.csv."""

from __future__ import annotations

import pytest

from specstack.report import build, render, sections
from tests.bundles import write_method, write_slow_c1_run

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
TEXTS = {"chat": {"a": ("t", "stop")}}


def _rows(tmp_path, spec_c4: float) -> dict:
    run_dir = tmp_path / f"gain-{spec_c4:g}"
    run_dir.mkdir()
    write_method(
        run_dir,
        "baseline",
        baseline=None,
        k=None,
        texts=TEXTS,
        cells={("chat", 1): [(10.0, 100.0, {})], ("chat", 4): [(12.0, 650.0, {})]},
    )
    write_method(
        run_dir,
        "eagle3",
        baseline="baseline",
        texts=TEXTS,
        acceptance={"chat": ACC},
        cells={("chat", 1): [(9.0, 100.0, {"acc_len": 2.0})], ("chat", 4): [(40.0, spec_c4, {"acc_len": 2.0})]},
    )
    rep = build.build(run_dir, with_plots=False)
    return {(r["method"], r["concurrency"]): r for r in rep.speed} | {
        "md": render.render_markdown(sections.blocks(rep))
    }


def test_a_c4_cell_that_served_what_c1_did_is_marked(tmp_path):
    rows = _rows(tmp_path, 104.0)
    c4 = rows[("eagle3", 4)]
    assert c4["throughput_speedup"] == pytest.approx(104.0 / 650.0)
    assert c4["no_batching_gain"] == "method 1.04× its c=1"
    assert "no batching gain at c=4: method 1.04× its c=1" in c4["note"]
    assert rows[("eagle3", 1)]["no_batching_gain"] is None and rows[("baseline", 4)]["no_batching_gain"] is None
    matrix = next(line for line in rows["md"].splitlines() if line.startswith("| eagle3 | baseline |"))
    assert matrix.count("⚠ no batching gain") == 1 and "⚠ no batching gain: at this c > 1" in rows["md"]


def test_a_c4_cell_that_gained_from_batching_is_not(tmp_path):
    rows = _rows(tmp_path, 260.0)  # 2.6× its c=1: batched, however much slower than the baseline
    assert rows[("eagle3", 4)]["no_batching_gain"] is None and "no batching gain" not in rows["md"]


def test_a_win_beyond_tokens_per_pass_against_a_slow_c1_baseline_is_named(tmp_path):
    """Issue 41 point 1: the chat baseline's c=1 cell was slower per request than its own c=4 (mean E2EL 236
    against 172 ms), so ngram 'won' at c=1 by 1.23×, more than its tokens per target pass allow even with free
    drafting. Both are named on the row, in the verdict matrix and in speed.csv."""
    run_dir = write_slow_c1_run(tmp_path / "bound")
    rep = build.build(run_dir, with_plots=False)
    rows = {(r["method"], r["concurrency"]): r for r in rep.speed}
    c1 = rows[("ngram", 1)]
    assert c1["tokens_per_target_pass"] < 1.1 and c1["throughput_speedup"] == pytest.approx(1.23)
    assert c1["beyond_bound"].startswith("1.23× > ") and "a free drafter allows" in c1["note"]
    assert c1["slow_c1"] == "baseline's c=1 slower per request than its c=4 (mean E2EL 236 against 172 ms)"
    assert rows[("baseline", 1)]["slow_c1"] == c1["slow_c1"] and rows[("ngram", 4)]["slow_c1"] is None
    assert rows[("ngram", 4)]["beyond_bound"] is None  # 0.95×: within what drafting can give
    md = render.render_markdown(sections.blocks(rep))
    matrix = next(line for line in md.splitlines() if line.startswith("| ngram | baseline |"))
    assert matrix.count("⚠ beyond bound") == 1 and matrix.count("⚠ slow c=1") == 1
    assert "⚠ beyond bound: the throughput ratio exceeds" in md and "⚠ slow c=1: a c=1 cell" in md


def test_the_speed_table_and_the_crossover_name_the_slow_c1_and_the_win_past_the_bound(tmp_path):
    """Issue 41 points 1 and 3: the throughput figure itself carries ⚠ beyond bound and ⚠ slow c=1 in the speed
    table (with their legend), and the crossover statement over c = 1, 4 names the c=1 cell it rests on."""
    run_dir = write_slow_c1_run(tmp_path / "bound")
    rep = build.build(run_dir, with_plots=False)
    md = render.render_markdown(sections.blocks(rep))
    c1 = next(line for line in md.splitlines() if line.startswith("| ngram | baseline | 1 |"))
    c4 = next(line for line in md.splitlines() if line.startswith("| ngram | baseline | 4 |"))
    assert "1.23× ⚠ slow c=1 ⚠ beyond bound |" in c1 and "⚠" not in c4.split("|")[7]
    assert "- ⚠ beyond bound: the throughput ratio exceeds" in md and "- ⚠ slow c=1: a c=1 cell" in md
    (cross,) = rep.crossover
    assert cross["throughput_text"] == (
        "stops beating the baseline at concurrency 4 (last win at 1) (by point estimates: fewer than 3 repeats, no "
        "interval) ⚠ rests on a slow c=1 at c=1 (a stall or a warm-up; the speed table's note names it) ⚠ beyond "
        "bound at c=1: past the tokens per target pass a free drafter allows, the baseline's cell was slow"
    )
    assert "⚠ rests on a slow c=1 at c=1" in cross["tpot_text"] and "beyond bound" not in cross["tpot_text"]


def test_the_speedup_plot_rings_and_names_the_marked_cells(tmp_path, monkeypatch):
    """Issue 41 point 3: the plots dropped the marks. The c=1 point is ringed with its words in both panels
    (beyond bound in the throughput panel only), the c=4 point is not, and the caption names the ring."""
    from matplotlib.axes import Axes

    from specstack.report import plots

    run_dir = write_slow_c1_run(tmp_path / "bound")
    drawn: list[tuple] = []
    real = Axes.annotate
    monkeypatch.setattr(
        Axes, "annotate", lambda self, text, xy, *a, **kw: drawn.append((text, xy[0])) or real(self, text, xy, *a, **kw)
    )
    rep = build.build(run_dir, with_plots=True)
    rings = [d for d in drawn if str(d[0]).startswith("⚠")]  # bar labels annotate too
    assert rings == [("⚠ slow c=1", 1), ("⚠ slow c=1, beyond bound", 1)]  # TPOT panel, then throughput
    [caption] = [c for n, c in rep.plot_captions.items() if "speedup_vs_concurrency" in n]
    assert caption.endswith(f"{plots.RING}: beyond bound, slow c=1; dashed line = 1.0×")
