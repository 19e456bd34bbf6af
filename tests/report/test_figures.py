"""Figures a careful reviewer would sign (issue 18), on constructed bundles whose right answer is known: a
degenerate ITL where TPOT is ~0 too, the per-position plot's never-drafted positions, the unstable-repeats mark
of the verdict matrix. Fast: no server, no model."""

from __future__ import annotations

import pytest

from specstack.figures import stats as st
from specstack.report import build, render, sections
from specstack.report import speed as sp
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
TEXTS = {"chat": {"a": ("t", "stop")}}


def _row(rows, **match):
    found = [r for r in rows if all(r[k] == v for k, v in match.items())]
    assert len(found) == 1, (match, found)
    return found[0]


def _blocks_md(rep) -> str:
    return render.render_markdown(sections.blocks(rep))


# --- 1. ITL degenerate where TPOT is ~0 too --------------------------------------------------------------


@pytest.mark.parametrize(
    "itl,tpot,burst,expected",
    [
        (0.0025, 0.001, True, True),  # both ~0 (a burst read): the TPOT comparison alone never fires
        (0.0025, 0.001, False, False),  # the same figures without a burst read: nothing says they are wrong
        (0.05, 1.0, False, True),  # the old rule: under a tenth of the TPOT p50
        (2.0, 1.0, False, False),
        (None, 1.0, True, False),
    ],
)
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
    write_method(
        run_dir,
        "draft_model",
        baseline="baseline",
        texts=TEXTS,
        acceptance={"chat": ACC},
        cells={("chat", 1): [(0.001, 100.0, {"acc_len": 2.0})] * 3},
    )
    write_method(
        run_dir,
        "ngram",
        baseline="baseline",
        texts=TEXTS,
        acceptance={"chat": ACC},
        cells={("chat", 4): [(1.0, 100.0, {"acc_len": 2.0})] * 3},
    )
    rep = build.build(run_dir, with_plots=False)
    burst = _row(rep.speed, method="draft_model")
    assert burst["itl_p50_ms"] == pytest.approx(0.002) and burst["tpot_p50_ms"] == pytest.approx(0.001)
    assert burst["itl_degenerate"] is True
    assert _row(rep.speed, method="baseline", concurrency=4)["itl_degenerate"] is True
    assert _row(rep.speed, method="baseline", concurrency=1)["itl_degenerate"] is False
    sound = _row(rep.speed, method="ngram")
    assert sound["tpot_degenerate"] and sound["itl_degenerate"] is False
    md = _blocks_md(rep)
    itl = {
        (cells[0], cells[1]): cells[5]
        for line in md.splitlines()
        if line.startswith("| ")
        and len(cells := [c.strip() for c in line.strip("|").split("|")]) == 9
        and cells[1] in ("1", "4")
    }
    assert itl[("draft_model", "1")].endswith("‡") and itl[("baseline", "4")].endswith("‡")
    assert not itl[("baseline", "1")].endswith("‡") and not itl[("ngram", "4")].endswith("‡")
    assert "‡ on ITL: degenerate" in md and "the method's own cell has a degenerate TPOT" in md


# --- 2. per-position plot: a position never drafted is no bar ------------------------------------------


def test_positions_never_drafted_get_no_bar_and_a_marker():
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    from specstack.report import plots

    # suffix at K=16: code drafted up to position 7, chat up to position 3; a drafted position whose drafts were
    # never accepted (chat 3: 0.0) is a real 0, the rest have no rate at all
    code = [0.6, 0.5, 0.4, 0.45, 0.3, 0.2, 0.1, 0.05] + [None] * 8
    chat = [0.5, 0.25, 0.1, 0.0] + [None] * 12
    fig, ax = plt.subplots()
    try:
        plots._position_bars(ax, {"code": code, "chat": chat}, "rate")
        bars = [p for p in ax.patches if isinstance(p, Rectangle)]
        # 8 + 4 bars, each at its task's slot (width 0.4, code left of the tick, chat right), heights as given
        assert sorted((round(b.get_x() + b.get_width() / 2, 6), round(b.get_height(), 6)) for b in bars) == sorted(
            [(round(p - 0.2, 6), v) for p, v in enumerate(code[:8])]
            + [(round(p + 0.2, 6), v) for p, v in enumerate(chat[:4])]
        )
        marks = [ln for ln in ax.lines if ln.get_marker() == "x"]
        xs = sorted(round(x, 6) for ln in marks for x in ln.get_xdata())
        assert xs == sorted([round(p - 0.2, 6) for p in range(8, 16)] + [round(p + 0.2, 6) for p in range(4, 16)])
        assert all(y == plots.NOT_DRAFTED_Y for ln in marks for y in ln.get_ydata())
        legend = [t.get_text() for t in ax.get_legend().get_texts()]
        assert legend.count(plots.NOT_DRAFTED) == 1 and {"code", "chat"} <= set(legend)
    finally:
        plt.close(fig)


def test_few_positions_never_drafted_are_labelled_in_words():
    import matplotlib.pyplot as plt

    from specstack.report import plots

    fig, ax = plt.subplots()
    try:
        plots._position_bars(ax, {"code": [0.6, 0.3, None, None]}, "rate")
        assert len(ax.patches) == 2
        assert [t.get_text() for t in ax.texts].count("not drafted") == 2
        assert sorted(t.get_text() for t in ax.texts if t.get_text() != "not drafted") == ["0.30", "0.60"]
    finally:
        plt.close(fig)


# --- 3. the verdict matrix marks a cell whose repeats spread past the gate ------------------------------


def test_the_matrix_marks_unstable_repeats(tmp_path):
    run_dir = tmp_path / "spread"
    run_dir.mkdir()
    texts = {"code": {"a": ("t", "stop")}}
    write_method(run_dir, "baseline", baseline=None, k=None, cells={("code", 1): [(10.0, 100.0, {})] * 3}, texts=texts)
    # ngram's TPOT p50 over its repeats: 5, 7, 4 ms -> median 5, |deviations| 0, 2, 1 -> MAD 1 = 20 % of the
    # median, past the 10 % gate; draft_model: 5.0, 5.1, 4.9 -> MAD 0.1 = 2 %, stable
    write_method(
        run_dir,
        "ngram",
        baseline="baseline",
        texts=texts,
        acceptance={"code": ACC},
        cells={("code", 1): [(t, 200.0, {"acc_len": 2.0}) for t in (5.0, 7.0, 4.0)]},
    )
    write_method(
        run_dir,
        "draft_model",
        baseline="baseline",
        texts=texts,
        acceptance={"code": ACC},
        cells={("code", 1): [(t, 200.0, {"acc_len": 2.0}) for t in (5.0, 5.1, 4.9)]},
    )
    rep = build.build(run_dir, with_plots=False)
    noisy, steady = _row(rep.speed, method="ngram"), _row(rep.speed, method="draft_model")
    assert noisy["tpot_spread"] == pytest.approx(0.2) and noisy["stability"] == "unstable"
    assert noisy["tpot_spread"] > st.MAX_RELATIVE_MAD
    assert steady["tpot_spread"] == pytest.approx(0.02) and steady["stability"] == "stable"
    md = _blocks_md(rep)
    lines = md.split("## Verdict", 1)[1].splitlines()  # the matrix is the first table naming each method
    matrix = {
        m: next(ln for ln in lines if ln.startswith(f"| {m} | baseline |")).split("|")[3].strip()
        for m in ("ngram", "draft_model")
    }
    assert matrix["ngram"].startswith("helped · TPOT p50 2.00× [1.43–2.50]")  # medians of resamples: 10/7 to 10/4
    assert matrix["ngram"].endswith("⚠ unstable repeats") and "⚠ unstable" not in matrix["draft_model"]
    # these cells' 2× is more than their 1.06 tokens per target pass allow: marked as such, on both
    assert all("⚠ beyond bound" in m for m in matrix.values())
    assert f"⚠ unstable repeats: the repeats of a side spread more than {st.MAX_RELATIVE_MAD:.0%}" in md


# --- 4. the report names the session order the bundle recorded ------------------------------------------


def test_the_header_names_the_session_order_of_the_bundle():
    abba = sections._replication({"replicate": "sessions", "sessions": 3, "session_order": "ABBA"})
    assert abba == (
        "3 server sessions per method, interleaved with the baseline's (ABBA: B M, then M B, …), one "
        "bench repeat per cell in each"
    )
    # a bundle from before the ABBA order recorded none: every round ran baselines first
    assert "(B M B M …)" in sections._replication({"replicate": "sessions", "sessions": 3})
