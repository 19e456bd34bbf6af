"""Issue 41 point 6: the worst result looked clean. eagle3 chat c=4 read 0.16× with no mark, while its own
throughput at c=4 was 1.04× its c=1 (the server did not batch, or the client starved it): a c > 1 cell whose side
gained nothing from the concurrency is named in the speed table's note, the verdict matrix and speed.csv."""
from __future__ import annotations

import pytest

from specstack.report import build, render, sections
from tests.bundles import write_method

pytestmark = pytest.mark.unit

ACC = {"acceptance_rate": 0.5, "mean_acceptance_length": 3.0, "histogram": [2, 1, 1, 0, 4],
       "per_position": [0.75, 0.625, 0.5, 0.5], "no_accept_share": 0.25, "num_spec_steps": 8,
       "num_draft_tokens": 32, "num_accepted_draft_tokens": 16}
TEXTS = {"chat": {"a": ("t", "stop")}}


def _rows(tmp_path, spec_c4: float) -> dict:
    run_dir = tmp_path / f"gain-{spec_c4:g}"
    run_dir.mkdir()
    write_method(run_dir, "baseline", baseline=None, k=None, texts=TEXTS,
                 cells={("chat", 1): [(10.0, 100.0, {})], ("chat", 4): [(12.0, 650.0, {})]})
    write_method(run_dir, "eagle3", baseline="baseline", texts=TEXTS, acceptance={"chat": ACC},
                 cells={("chat", 1): [(9.0, 100.0, {"acc_len": 2.0})],
                        ("chat", 4): [(40.0, spec_c4, {"acc_len": 2.0})]})
    rep = build.build(run_dir, with_plots=False)
    return {(r["method"], r["concurrency"]): r for r in rep.speed} | {"md": render.render_markdown(
        sections.blocks(rep))}


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
    rows = _rows(tmp_path, 260.0)   # 2.6× its c=1: batched, however much slower than the baseline
    assert rows[("eagle3", 4)]["no_batching_gain"] is None and "no batching gain" not in rows["md"]
