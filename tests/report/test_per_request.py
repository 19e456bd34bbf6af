"""Issue 29, points 1-3, on constructed bench cells whose right answer is known: a stalled cell is marked with every
ratio built on it; TPOT degeneracy is decided per request (no cliff at the aggregate rule's boundary) and no ratio
of a degenerate TPOT is printed; a verdict names its statistic and shows mean and p95 beside the median."""

from __future__ import annotations

import json

import pytest
from rich.console import Console

from specstack.measure import per_request as pr
from specstack.report import build, console_table, render, sections
from tests.bundles import per_request_lists, write_method

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
STEADY = [[1.5] * 63] * 16  # 64-token answers streamed one chunk per 1.5 ms step


def _row(rows, **match):
    found = [r for r in rows if all(r[k] == v for k, v in match.items())]
    assert len(found) == 1, (match, found)
    return found[0]


def _cell(tput: float, lists: dict, **extra) -> tuple:
    """A repeat whose bench percentiles agree with its per-request lists (E2EL p50 and mean from them)."""
    e2el = sorted(x * 1000 for x in lists["latencies"])
    return (1.5, tput, {"completed": 16, "out_tokens": 1024, "e2el": e2el[len(e2el) // 2], "requests": lists, **extra})


# -- point 1: a sub-second stall -------------------------------------------------------------------------------


def test_a_pause_in_sending_and_ttft_outliers_are_found_with_their_size():
    ttft = [20.0] * 16
    ttft[5] = ttft[9] = ttft[13] = 990.0  # three requests waited ~1 s for their first token
    lists = per_request_lists(ttft, STEADY, concurrency=4, pauses_ms={8: 870.0})
    fig = pr.cell_figures({**lists, "request_rate": "inf"}, 4)
    # the sends due during the pause (slots freed while the client did not run) all left late
    assert fig["send_pauses"] == 3 and fig["max_send_pause_ms"] == pytest.approx(870.0)
    assert fig["ttft_outliers"] == 3 and fig["max_ttft_ms"] == pytest.approx(990.0)
    assert fig["stall"] == (
        "3 request(s) sent late, by up to 870 ms, 3 TTFT outlier(s) up to 990 ms (median 20), "
        "3 E2EL outlier(s) up to 1084 ms (median 114)"
    )
    quiet = pr.cell_figures({**per_request_lists([20.0] * 16, STEADY, concurrency=4), "request_rate": "inf"}, 4)
    assert quiet["send_pauses"] == 0 and quiet["max_send_pause_ms"] == pytest.approx(0.0) and quiet["stall"] is None
    # an open loop sends on its own schedule: no send pause is defined there
    assert pr.cell_figures({**lists, "request_rate": "2.0"}, 4)["max_send_pause_ms"] is None


def test_a_stalled_baseline_cell_marks_every_ratio_built_on_it(tmp_path):
    run_dir = tmp_path / "stall"
    run_dir.mkdir()
    quiet = per_request_lists([20.0] * 16, STEADY, concurrency=4)
    ttft = [20.0] * 16
    ttft[3] = 990.0
    stalled = per_request_lists(ttft, STEADY, concurrency=4, pauses_ms={6: 870.0})
    one = per_request_lists([20.0] * 16, STEADY)
    base = {("chat", 1): [_cell(500.0, one)], ("chat", 4): [_cell(520.0, stalled)]}
    spec = {("chat", 1): [_cell(600.0, one, acc_len=2.0)], ("chat", 4): [_cell(1100.0, quiet, acc_len=2.0)]}
    write_method(run_dir, "baseline", baseline=None, k=None, cells=base, texts=TEXTS)
    write_method(run_dir, "ngram", baseline="baseline", cells=spec, texts=TEXTS, acceptance={"chat": ACC})
    rep = build.build(run_dir, with_plots=False)
    c4, c1 = _row(rep.speed, method="ngram", concurrency=4), _row(rep.speed, method="ngram", concurrency=1)
    assert c4["stalled"] is True and c4["stall"].startswith("baseline r0: 3 request(s) sent late, by up to 870 ms")
    assert c1["stalled"] is False and c1["stall"] is None  # known quiet, not unknown
    # the baseline's own row names its repeat, not a "method" side it does not have
    assert _row(rep.speed, method="baseline", concurrency=4)["stall"].startswith("r0: 3 request(s) sent late")
    assert _row(rep.cells, method="baseline", concurrency=4)["send_pauses"] == 3
    md = render.render_markdown(sections.blocks(rep))
    matrix = next(line for line in md.splitlines() if line.startswith("| ngram | baseline |"))
    assert matrix.count("⚠ stall") == 1  # c=4 only
    speed_line = next(line for line in md.splitlines() if line.startswith("| ngram | baseline | 4 |"))
    assert "2.12× ⚠ stall" in speed_line and "⚠ stall (baseline r0: 3 request(s) sent late" in speed_line
    assert "⚠ stall: in a repeat of the row" in md
    # issue 41 point 3: the crossover over c = 1, 4 rests on the stalled c=4 cell too, and says so
    (cross,) = [r for r in rep.crossover if r["method"] == "ngram"]
    assert cross["stalled_concurrencies"] == "4"
    assert (
        "⚠ rests on a stall at c=4 (the speed table names it) ⚠ beyond bound at c=1, 4: past the tokens per "
        "target pass" in cross["throughput_text"]
    )  # both ratios exceed ngram's 1.02 tokens per pass
    assert cross["tpot_text"].endswith("⚠ rests on a stall at c=4 (the speed table names it)")
    console = Console(record=True, width=250)
    console_table.print_run(run_dir, console)
    out = console.export_text()
    # ‼: both ratios exceed ngram's 1.02 tokens per target pass here (report.md's ⚠ beyond bound too)
    assert "1100.0 (2.12×) ‼ ⚠" in out and "600.0 (1.20×) ‼ ⚠" not in out and "⚠ = a repeat of this cell" in out


def test_a_cell_slower_than_one_request_after_another_is_a_stall():
    assert pr.slower_than_serial(500.0, 4, 100.0) is True  # 4 in flight took 5x one alone
    assert pr.slower_than_serial(420.0, 4, 100.0) is False  # within 10 %: batching can cost that much
    assert pr.slower_than_serial(500.0, 1, 100.0) is False and pr.slower_than_serial(None, 4, 100.0) is False


def test_without_per_request_data_a_stall_is_unknown_not_absent(tmp_path):
    run_dir = tmp_path / "old"
    run_dir.mkdir()
    write_method(run_dir, "baseline", baseline=None, k=None, cells={("chat", 1): [(1.0, 100.0, {})]}, texts=TEXTS)
    write_method(
        run_dir,
        "ngram",
        baseline="baseline",
        cells={("chat", 1): [(1.0, 100.0, {"acc_len": 2.0})]},
        texts=TEXTS,
        acceptance={"chat": ACC},
    )
    r = _row(build.build(run_dir, with_plots=False).speed, method="ngram")
    assert r["stalled"] is None and r["stall"] is None


# -- point 2: TPOT degeneracy per request -------------------------------------------------------------------------


def test_the_burst_rule_counts_the_chunks_ttft_swallowed_per_request():
    def fig(lead: int) -> dict:
        itls = [[0.002] * lead + [1.5] * (63 - lead)] + STEADY[1:]
        return pr.cell_figures({**per_request_lists([20.0] * 16, itls), "request_rate": "inf"}, 1)

    assert pr.leading_burst([0.002, 0.05, 0.2, 0.001]) == 2
    assert fig(6)["burst_requests"] == 0 and not pr.tpot_degenerate(fig(6))  # 6 of 63: TPOT off by < 10 %
    assert fig(7)["burst_requests"] == 1 and pr.tpot_degenerate(fig(7))  # 7 of 63: more than 10 %
    # bursts later in the stream leave TPOT whole but make the chunk gaps meaningless
    late = [[1.5] * 30 + [0.002] * 33] * 16
    f = pr.cell_figures({**per_request_lists([20.0] * 16, late), "request_rate": "inf"}, 1)
    assert not pr.tpot_degenerate(f) and pr.itl_degenerate(f)


def test_a_tpot_just_past_the_aggregate_boundary_is_degenerate_from_its_requests(tmp_path):
    """The aggregate rule (TPOT p50 × (tokens − 1) under a tenth of E2EL p50) passed ngram chat c=1 by 0.3 % and its
    verdict read "TPOT 2.79×" while E2EL was 0.75×: half its requests had been read in a burst."""
    run_dir = tmp_path / "cliff"
    run_dir.mkdir()
    steady = per_request_lists([20.0] * 16, STEADY)
    burst = [[0.002] * 63] * 8 + STEADY[8:]
    bursty = per_request_lists([110.0] * 8 + [20.0] * 8, burst)
    # the aggregate rule passes the bursty cell: TPOT p50 0.54 ms × 63 = 34 ms, over a tenth of its 110 ms E2EL p50
    base = {("chat", 1): [(1.5, 500.0, {"completed": 16, "out_tokens": 1024, "e2el": 114.5, "requests": steady})]}
    spec = {
        ("chat", 1): [
            (0.54, 380.0, {"completed": 16, "out_tokens": 1024, "e2el": 110.2, "acc_len": 2.0, "requests": bursty})
        ]
    }
    write_method(run_dir, "baseline", baseline=None, k=None, cells=base, texts=TEXTS)
    write_method(run_dir, "ngram", baseline="baseline", cells=spec, texts=TEXTS, acceptance={"chat": ACC})
    rep = build.build(run_dir, with_plots=False)
    cell = _row(rep.cells, method="ngram")
    assert cell["burst_requests"] == 8 and cell["degeneracy_rule"] == "per request" and cell["tpot_degenerate"]
    r = _row(rep.speed, method="ngram")
    assert r["latency_basis"] == "E2EL" and r["tpot_speedup"] is None and r["tpot_mean_speedup"] is None
    assert r["efficiency"] is None and r["tpot_verdict"] == "degenerate: no ratio"
    md = render.render_markdown(sections.blocks(rep))
    assert "2.78×" not in md and "| no ratio ‡ |" in md
    assert "· E2EL p50 1.04×" in next(line for line in md.splitlines() if line.startswith("| ngram | baseline |"))
    # issue 41 point 2: the TTFT of a row that read answers in a burst holds decode time, and says so
    latency = [line for line in md.splitlines() if line.startswith("| ngram | 1 |")]
    assert len(latency) == 1 and latency[0].split("|")[8].strip().endswith("‡"), latency
    assert (
        not next(line for line in md.splitlines() if line.startswith("| baseline | 1 |"))
        .split("|")[8]
        .strip()
        .endswith("‡")
    )
    assert "On a TTFT: the row's own cells read answers in a burst" in md
    # the note says how much of which side was read in a burst, not that "answers arrived in a burst"
    assert r["tpot_burst_method"] == "8 of 16 requests read in a burst" and r["tpot_burst_baseline"] is None
    assert "TPOT degenerate on the method's side (8 of 16 requests read in a burst): verdict on E2EL" in r["note"], r[
        "note"
    ]


# -- point 3: medians hide tails ----------------------------------------------------------------------------------


def test_a_verdict_shows_mean_and_p95_beside_the_median_and_flags_a_skewed_tail(tmp_path):
    run_dir = tmp_path / "tail"
    run_dir.mkdir()
    # burst-read TPOTs on both sides (aggregate rule: an old bundle), so the verdict rests on E2EL
    base = {("chat", 1): [(0.001, 100.0, {"e2el": 102.0})]}
    spec = {("chat", 1): [(0.001, 87.0, {"e2el": 100.0, "acc_len": 2.0})]}
    write_method(run_dir, "baseline", baseline=None, k=None, cells=base, texts=TEXTS)
    write_method(run_dir, "ngram", baseline="baseline", cells=spec, texts=TEXTS, acceptance={"chat": ACC})
    # the same median, a slow tail: p95 275.8 against 123.6 ms, mean 0.87× of the baseline's
    for method, fields in (
        ("ngram", {"mean_e2el_ms": 102.0 / 0.87, "p95_e2el_ms": 275.8}),
        ("baseline", {"mean_e2el_ms": 102.0, "p95_e2el_ms": 123.6}),
    ):
        f = run_dir / method / "bench" / "chat-c1-r0.json"
        f.write_text(json.dumps({**json.loads(f.read_text()), **fields}))
    rep = build.build(run_dir, with_plots=False)
    r = _row(rep.speed, method="ngram")
    assert r["latency_basis"] == "E2EL" and r["latency_statistic"] == "p50 over requests, one repeat"
    assert r["latency_speedup"] == pytest.approx(1.02) and r["latency_mean_speedup"] == pytest.approx(0.87)
    assert r["latency_p95_speedup"] == pytest.approx(123.6 / 275.8) and r["tail_disagrees"] is True
    md = render.render_markdown(sections.blocks(rep))
    matrix = next(line for line in md.splitlines() if line.startswith("| ngram | baseline |"))
    assert "point only · E2EL p50 1.02× (mean 0.87×, p95 0.45×) · tput 0.87× ⚠ tail disagrees" in matrix
    assert "no interval: no cell has 3 repeats on both sides" in md and "with 95 % intervals" not in md
    assert _tail(1.02, 1.0, 0.99) is False and _tail(0.9, 0.97, None) is False and _tail(0.9, 1.06) is True


@pytest.mark.parametrize(("requests", "disagrees"), [(16, False), (200, True)])
def test_a_p95_marked_unstable_never_decides_that_the_tail_disagrees(tmp_path, requests, disagrees):
    """Issue 41 point 4: with 16 requests a repeat the p95 is † (fewer than 10 requests beyond it) and says
    nothing; only a stable one (≥ 200 requests) may call the median's verdict into question."""
    run_dir = tmp_path / f"p95-{requests}"
    run_dir.mkdir()
    out = requests * 64
    base = {("chat", 1): [(0.001, 100.0, {"e2el": 102.0, "completed": requests, "out_tokens": out})]}
    spec = {("chat", 1): [(0.001, 101.0, {"e2el": 100.0, "acc_len": 2.0, "completed": requests, "out_tokens": out})]}
    write_method(run_dir, "baseline", baseline=None, k=None, cells=base, texts=TEXTS)
    write_method(run_dir, "ngram", baseline="baseline", cells=spec, texts=TEXTS, acceptance={"chat": ACC})
    # the median and the mean agree (1.02×, faster); only the p95 says slower (0.45×)
    for method, fields in (
        ("ngram", {"mean_e2el_ms": 100.0, "p95_e2el_ms": 275.8}),
        ("baseline", {"mean_e2el_ms": 102.0, "p95_e2el_ms": 123.6}),
    ):
        f = run_dir / method / "bench" / "chat-c1-r0.json"
        f.write_text(json.dumps({**json.loads(f.read_text()), **fields}))
    r = _row(build.build(run_dir, with_plots=False).speed, method="ngram")
    assert r["requests_per_repeat"] == requests and r["e2el_p95_unstable"] is (requests < 200)
    assert r["latency_p95_speedup"] == pytest.approx(123.6 / 275.8)
    assert r["tail_disagrees"] is disagrees


def _tail(median, *others):
    from specstack.report.speed import _tail_disagrees

    return _tail_disagrees(median, *others)
