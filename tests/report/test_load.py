"""The report's Load section on constructed bundles with open-loop cells (--rates) beside closed-loop ones:
speedups per offered rate and the crossover in rate, the per-user vs system frontier with its validity flags and
the throughput at equal per-user speed, and the capacity at the SLO with its bracket. The concurrency-keyed
parts of the report (speed table, console table, crossover in concurrency) keep only closed-loop cells."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from specstack.report import build, load, render, sections
from specstack.report.console_table import summaries_of, task_table
from specstack.results.reader import load_run
from tests.bundles import manifest, write_method

pytestmark = pytest.mark.unit

TEXTS = {"code": {"r0": ("a b", "stop")}}
OUT = 384  # output tokens per repeat (8 requests × 48): request_throughput = 8 × tput / 384


def _served(tput: float) -> float:
    return 8 * tput / OUT


def _e2el_for(in_flight: float, tput: float) -> float:
    """The mean E2EL (ms) that makes a cell hold `in_flight` requests on average (Little's law)."""
    return in_flight / _served(tput) * 1000


def _summary_load(run_dir: Path, method: str, capacity: dict | None) -> None:
    path = run_dir / method / "summary.json"
    s = json.loads(path.read_text())
    s["load"] = {
        "burstiness": 1.0,
        "tasks": {
            "code": {"rates": [1.0, 2.0, 4.0], "rates_from": "--rates", **({"capacity": capacity} if capacity else {})}
        },
    }
    path.write_text(json.dumps(s))


@pytest.fixture
def run(tmp_path) -> Path:
    run_dir = tmp_path / "load"
    run_dir.mkdir()
    # closed loop: c=1 holds 1 request in flight (no flag); c=4 holds 4
    base = {
        ("code", 1): [(10.0, 100.0, {"e2el": _e2el_for(1, 100.0)})] * 3,
        ("code", 4): [(20.0, 300.0, {"e2el": _e2el_for(4, 300.0)})] * 3,
        # open loop: served = offered at 1 and 2 req/s; at 4 req/s the server falls behind and TTFT queues
        ("code", ("rate", 1.0)): [(10.0, 48.0, {})] * 3,
        ("code", ("rate", 2.0)): [(12.0, 96.0, {})] * 3,
        ("code", ("rate", 4.0)): [(30.0, 120.0, {"ttft": 400.0})] * 3,
    }
    write_method(run_dir, "baseline", baseline=None, k=None, cells=base, texts=TEXTS)
    # ngram: clearly higher throughput at 1 and 2 req/s, clearly lower at 4 req/s: the crossover is at 4 req/s
    ngram = {
        ("code", 1): [(8.0, 120.0, {"acc_len": 2.0, "e2el": _e2el_for(1, 120.0)})] * 3,
        ("code", 4): [(15.0, 330.0, {"acc_len": 2.0, "e2el": _e2el_for(4, 330.0)})] * 3,
        ("code", ("rate", 1.0)): [(8.0, t, {"acc_len": 2.0}) for t in (52.0, 53.0, 54.0)],
        ("code", ("rate", 2.0)): [(9.0, t, {"acc_len": 2.0}) for t in (100.0, 101.0, 102.0)],
        ("code", ("rate", 4.0)): [(40.0, t, {"acc_len": 2.0}) for t in (100.0, 101.0, 102.0)],
    }
    write_method(run_dir, "ngram", baseline="baseline", cells=ngram, texts=TEXTS)
    _summary_load(
        run_dir,
        "baseline",
        {
            "share": 0.9,
            "slo": {"ttft": 500.0},
            "kind": "found",
            "rate": 2.0,
            "bound": 2.4,
            "resolution": 0.25,
            "probes": [{"rate": 2.83, "passed": False}],
            "text": "2 req/s (meets the SLO; 2.4 req/s fails it)",
        },
    )
    _summary_load(
        run_dir,
        "ngram",
        {
            "share": 0.9,
            "slo": {"ttft": 500.0},
            "kind": "never",
            "rate": None,
            "bound": 1.0,
            "resolution": 0.25,
            "probes": [],
            "text": "never meets the SLO: even 1 req/s, the lowest rate tested, fails it",
        },
    )
    manifest(run_dir, {m: {"status": "ok", "dir": m, "error": None} for m in ("baseline", "ngram")})
    return run_dir


def test_speed_per_offered_rate_and_the_crossover_in_rate(run):
    rep = build.build(run, with_plots=False)
    assert {(r["method"], r["concurrency"]) for r in rep.speed} == {
        (m, c) for m in ("baseline", "ngram") for c in (1, 4)
    }  # closed loop only
    ngram = {r["request_rate"]: r for r in rep.rates if r["method"] == "ngram"}
    assert sorted(ngram) == [1.0, 2.0, 4.0] and all(r["load"] == "rate" and r["repeats"] == 3 for r in ngram.values())
    assert ngram[1.0]["throughput_speedup"] == pytest.approx(53.0 / 48.0)
    assert ngram[2.0]["throughput_speedup_low"] > 1.0 and ngram[4.0]["throughput_speedup_high"] < 1.0
    cross = next(r for r in rep.rate_crossover if r["method"] == "ngram")
    assert cross["throughput_kind"] == "crossover" and cross["throughput_crossover_rate"] == 4.0
    assert "stops clearly beating the baseline at rate 4 req/s (last win at 2 req/s)" in cross["throughput_text"]


def test_frontier_flags_the_points_that_measure_queueing(run):
    rep = build.build(run, with_plots=False)
    points = {(p["method"], p["offered"]): p for p in rep.frontier}
    assert len(points) == 10 and all(p["per_user_basis"] == "TPOT" for p in points.values())
    assert points[("baseline", "c=1")]["per_user_tok_s"] == pytest.approx(100.0)  # 1000 / TPOT 10 ms
    assert points[("baseline", "c=1")]["mean_in_flight"] == pytest.approx(1.0)
    assert points[("baseline", "c=1")]["flags"] is None and points[("baseline", "c=4")]["flags"] is None
    late = points[("baseline", "4 req/s")]["flags"]
    assert "queueing: TTFT p50 400 ms > 3× the c=1 cell's 40 ms" in late and "fell behind: served 2.50 of 4" in late
    assert points[("baseline", "1 req/s")]["flags"] is None  # served 1.00 of 1 offered


def test_a_c1_cell_slower_than_its_higher_loads_is_named_so_never_queueing():
    """Issue 41 point 5: nothing queues at c=1. A c=1 cell whose TTFT is far above the c=4 cell's was flagged
    "queueing", against a "lowest-load" cell that was the c=4 one; now the c=1 cell is the reference, named, and
    its own slowness is flagged as such."""

    def cell(c, ttft, rate=None):
        return {
            "method": "baseline",
            "task": "chat",
            "load": "concurrency" if rate is None else "rate",
            "concurrency": c,
            "request_rate": rate,
            "ttft_p50_ms": ttft,
        }

    c1, c4, c16, r8 = cell(1, 236.0), cell(4, 40.0), cell(16, 400.0), cell(None, 800.0, rate=8.0)
    same = [c1, c4, c16, r8]
    lowest = load._lowest_load(same)[("baseline", "chat")]
    assert lowest is c1
    assert load._queueing(c1, lowest, same) == (
        "slow at the lowest load: TTFT p50 236 ms > 3× the c=4 cell's "
        "40 ms (nothing queues at c=1: a stall or a warm-up)"
    )
    assert load._queueing(c4, lowest, same) is None
    assert load._queueing(c16, lowest, same) is None  # 400 ms is not 3× c=1's 236 ms
    assert load._queueing(r8, lowest, same) == "queueing: TTFT p50 800 ms > 3× the c=1 cell's 236 ms"
    fast = cell(1, 40.0)
    assert load._queueing(fast, fast, [fast, c4]) is None  # the reference at its usual speed


def test_throughput_at_equal_per_user_speed_interpolates_the_baseline_frontier(run):
    rep = build.build(run, with_plots=False)
    ngram_c4 = next(p for p in rep.frontier if p["method"] == "ngram" and p["offered"] == "c=4")
    # the baseline's frontier (per-user, system): c=4 (50, 300) and c=1 (100, 100); every rate cell lies under it
    front = load.pareto([(p["per_user_tok_s"], p["system_tok_s"]) for p in rep.frontier if p["method"] == "baseline"])
    assert front == [(50.0, 300.0), (100.0, 100.0)]
    assert {p["offered"] for p in rep.frontier if p["method"] == "baseline" and p["on_frontier"]} == {"c=1", "c=4"}
    at = 300.0 + (100.0 - 300.0) * (1000 / 15 - 50.0) / 50.0
    assert ngram_c4["baseline_system_at_equal_per_user"] == pytest.approx(at)
    assert ngram_c4["system_at_equal_per_user"] == pytest.approx(330.0 / at)
    faster = next(p for p in rep.frontier if p["method"] == "ngram" and p["offered"] == "c=1")
    assert faster["per_user_tok_s"] == 125.0 and faster["system_at_equal_per_user"] is None  # beyond the baseline
    md = render.render_markdown(sections.blocks(rep))
    assert f"ngram: system throughput at equal per-user speed {330.0 / at:.2f}× at 67 tok/s per user (c=4)" in md


def test_capacity_rows_state_the_bracket_and_a_method_that_never_meets_the_slo(run):
    rep = build.build(run, with_plots=False)
    rows = {r["method"]: r for r in rep.capacity}
    assert rows["baseline"]["capacity_req_s"] == 2.0 and rows["baseline"]["fails_at_req_s"] == 2.4
    assert rows["ngram"]["kind"] == "never" and rows["ngram"]["capacity_speedup"] is None
    md = render.render_markdown(sections.blocks(rep))
    load_md = md.split("## Load", 1)[1]
    assert (
        "never meets the SLO: even 1 req/s" in load_md
        and "capacity at the SLO (≥ 90% of requests meeting ttft ≤ 500 ms)" in load_md
    )
    assert "crossover in offered rate" in load_md and "per-user vs system speed" in load_md


def test_capacity_speedup_carries_both_brackets():
    r = load.capacity.ratio({"rate": 3.0, "bound": 4.0}, {"rate": 2.0, "bound": 2.4})
    assert (r["point"], r["low"], r["high"]) == (1.5, pytest.approx(3.0 / 2.4), 2.0)
    assert math.isinf(load.capacity.ratio({"rate": 3.0, "bound": None}, {"rate": 2.0, "bound": 2.4})["high"])


def test_plots_and_tables_hold_the_load_figures(run):
    rep = build.build(run, with_plots=True)
    assert {"report/frontier_code.png", "report/speedup_vs_rate_code.png"} <= set(rep.plots)
    assert all(rep.plots[n][:8] == b"\x89PNG\r\n\x1a\n" for n in ("report/frontier_code.png",))
    tables = rep.tables()
    assert len(tables["load_speed"]) == 6 and len(tables["frontier"]) == 10 and len(tables["capacity"]) == 2


def test_the_console_table_keeps_closed_loop_cells_only(run):
    summaries, _ = summaries_of(load_run(run))
    headers = [str(col.header) for col in task_table(summaries, "code").columns]
    assert headers[-2:] == ["c=1 (× base)", "c=4 (× base)"]


def test_the_crossover_in_rate_names_a_stall_and_a_win_past_the_bound():
    """Issue 41 point 3: the crossover in offered rate says which cells its statement rests on, as the one in
    concurrency does (report/marks.py crossover_marks)."""
    from specstack.report import load

    def row(rate, tput, **marks):
        return {
            "method": "ngram",
            "label": "ngram",
            "baseline": "baseline",
            "task": "code",
            "role": "spec",
            "request_rate": rate,
            "throughput_speedup": tput,
            "throughput_speedup_low": None,
            "latency_speedup": 1.2,
            "latency_speedup_low": None,
            **marks,
        }

    (cross,) = load.rate_crossover_rows(
        [row(1.0, 1.3, beyond_bound="1.30× > 1.10 tokens per target pass"), row(2.0, 1.1, stalled=True)]
    )
    assert cross["throughput_text"].startswith("beats the baseline at every tested rate (1 req/s, 2 req/s)")
    assert cross["throughput_text"].endswith(
        " ⚠ rests on a stall at 2 req/s (the speed table names it) ⚠ beyond "
        "bound at 1 req/s: past the tokens per target pass a free drafter "
        "allows, the baseline's cell was slow"
    )
    assert cross["latency_text"].endswith("⚠ rests on a stall at 2 req/s (the speed table names it)")
