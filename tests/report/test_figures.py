"""Figures a careful reviewer would sign (issue 18), on constructed bundles whose right answer is known: a
degenerate ITL where TPOT is ~0 too, the per-position plot's never-drafted positions, the unstable-repeats mark
of the verdict matrix. Fast: no server, no model."""
from __future__ import annotations

import json

import pytest

from specstack.report import build, render, sections
from specstack.report import speed as sp
from specstack.report import stats as st

from tests.bundles import write_method

pytestmark = pytest.mark.unit

ACC = {"acceptance_rate": 0.5, "mean_acceptance_length": 3.0, "histogram": [2, 1, 1, 0, 4],
       "per_position": [0.75, 0.625, 0.5, 0.5], "no_accept_share": 0.25, "num_spec_steps": 8,
       "num_draft_tokens": 32, "num_accepted_draft_tokens": 16}
TEXTS = {"chat": {"a": ("t", "stop")}}


def _row(rows, **match):
    found = [r for r in rows if all(r[k] == v for k, v in match.items())]
    assert len(found) == 1, (match, found)
    return found[0]


def _blocks_md(rep) -> str:
    return render.render_markdown(sections.blocks(rep))


# --- 1. ITL degenerate where TPOT is ~0 too --------------------------------------------------------------

@pytest.mark.parametrize("itl,tpot,burst,expected", [
    (0.0025, 0.001, True, True),     # both ~0 (a burst read): the TPOT comparison alone never fires
    (0.0025, 0.001, False, False),   # the same figures without a burst read: nothing says they are wrong
    (0.05, 1.0, False, True),        # the old rule: under a tenth of the TPOT p50
    (2.0, 1.0, False, False), (None, 1.0, True, False),
])
def test_itl_degenerate_rule(itl, tpot, burst, expected):
    assert sp.itl_degenerate(itl, tpot, burst) is expected


def test_an_itl_is_degenerate_when_its_own_tpot_is_a_burst_read(tmp_path):
    run_dir = tmp_path / "itl0"
    run_dir.mkdir()
    # bench_json: ITL = 2 x TPOT, E2EL 100 ms, 48 tokens per answer. draft_model reads TPOT 0.001 ms, ITL
    # 0.002 ms: 0.001 x 47 < 0.1 x 100, a burst read; ITL is 2x TPOT, so "ITL < 0.1 x TPOT" cannot see it.
    # ngram's own cells are sound (TPOT 1 ms, ITL 2 ms) but its baseline's chat c=4 is a burst read: the
    # row's verdict moves to E2EL, its ITL stays unflagged.
    base = {("chat", 1): [(1.0, 100.0, {})] * 3, ("chat", 4): [(0.001, 100.0, {})] * 3}
    write_method(run_dir, "baseline", baseline=None, k=None, cells=base, texts=TEXTS)
    write_method(run_dir, "draft_model", baseline="baseline", texts=TEXTS, acceptance={"chat": ACC},
                 cells={("chat", 1): [(0.001, 100.0, {"acc_len": 2.0})] * 3})
    write_method(run_dir, "ngram", baseline="baseline", texts=TEXTS, acceptance={"chat": ACC},
                 cells={("chat", 4): [(1.0, 100.0, {"acc_len": 2.0})] * 3})
    rep = build.build(run_dir, with_plots=False)
    burst = _row(rep.speed, method="draft_model")
    assert burst["itl_p50_ms"] == pytest.approx(0.002) and burst["tpot_p50_ms"] == pytest.approx(0.001)
    assert burst["itl_degenerate"] is True
    assert _row(rep.speed, method="baseline", concurrency=4)["itl_degenerate"] is True
    assert _row(rep.speed, method="baseline", concurrency=1)["itl_degenerate"] is False
    sound = _row(rep.speed, method="ngram")
    assert sound["tpot_degenerate"] and sound["itl_degenerate"] is False
    md = _blocks_md(rep)
    itl = {(cells[0], cells[1]): cells[5] for line in md.splitlines() if line.startswith("| ")
           and len(cells := [c.strip() for c in line.strip("|").split("|")]) == 8 and cells[1] in ("1", "4")}
    assert itl[("draft_model", "1")].endswith("‡") and itl[("baseline", "4")].endswith("‡")
    assert not itl[("baseline", "1")].endswith("‡") and not itl[("ngram", "4")].endswith("‡")
    assert "‡ on ITL: degenerate" in md and "the method's own cell has a degenerate TPOT" in md
