"""Issue 42, the breakdown: per method its server start (vLLM's own start-up phases beside it), its windows by
phase, and the harness's time, which is neither; summed over the run. Read from the summaries alone."""

from __future__ import annotations

import json

import pytest

from specstack.report import build, render, sections, tables, time_breakdown
from specstack.results.sweep_time import SweepTime
from tests.bundles import manifest, write_method

pytestmark = pytest.mark.unit

TEXTS = {"code": {"r0": ("a b", "stop")}}


def _timed(
    run_dir,
    method: str,
    ready: float,
    total: float,
    windows: dict[str, float],
    startup: dict | None,
    checks: float | None = None,
    held: float | None = None,
) -> None:
    """Give the method's summary the timings and window spans a real run records."""
    path = run_dir / method / "summary.json"
    s = json.loads(path.read_text())
    t, spans = 1000.0, []
    for phase, seconds in windows.items():
        spans.append({"name": f"{phase}/x", "phase": phase, "start": t, "end": t + seconds, "checks": []})
        t += seconds + 0.5
    s["windows"] = spans
    s["timings"] = {"server_ready": ready, "total": total, **({} if checks is None else {"checks": checks})}
    if held is not None:
        s["timings"]["server_imports_beside_checks"] = held
    if startup:
        s["server"]["startup"] = startup
    path.write_text(json.dumps(s))


def test_each_method_s_time_is_start_windows_and_the_harness_rest(tmp_path):
    run_dir = tmp_path / "t"
    run_dir.mkdir()
    cells = {("code", 1): [(10.0, 100.0, {})]}
    write_method(run_dir, "baseline", baseline=None, k=None, cells=cells, texts=TEXTS)
    write_method(
        run_dir, "ngram", baseline="baseline", cells={("code", 1): [(8.0, 120.0, {"acc_len": 2.0})]}, texts=TEXTS
    )
    manifest(run_dir, {m: {"status": "ok", "dir": m, "error": None} for m in ("baseline", "ngram")})
    _timed(
        run_dir,
        "baseline",
        224.0,
        300.0,
        {"warmup": 4.0, "acceptance": 20.0, "bench": 40.0},
        # vLLM logged from its first line to ready 200 s, 20 of them to the engine core's first line
        {"mode": "compile", "to_engine": 20.0, "load": 12.0, "compile": 60.0, "warmup": 136.0, "graph_capture": 8.0}
        | {"total": 200.0},
    )
    _timed(run_dir, "ngram", 102.0, 200.0, {"warmup": 3.0, "acceptance": 30.0, "bench": 61.0}, None)
    rep = build.build(run_dir, with_plots=False)
    rows = {r["method"]: r for r in rep.time_breakdown}
    base, ngram = rows["baseline"], rows["ngram"]
    assert base["windows_s"] == pytest.approx(64.0) and base["harness_s"] == pytest.approx(12.0)
    assert base["harness_share"] == pytest.approx(0.04) and base["startup_warmup_s"] == 136.0
    assert ngram["bench_windows_s"] == pytest.approx(61.0) and ngram["harness_s"] == pytest.approx(4.0)
    assert base["startup_process_s"] == pytest.approx(24.0) and base["startup_to_engine_s"] == 20.0
    assert ngram["startup_compile_s"] is None and ngram["startup_process_s"] is None
    md = render.render_markdown(sections.blocks(rep))
    assert (
        "| baseline | 300.0 | 224.0 (n/a / 24.0 / 20.0 / 12.0 / 60.0 / 136.0 / 8.0) | 4.0 | 20.0 | 0.0 | 40.0 | 12.0 (4.0 %) |"
        in md
    )
    assert "| all methods | 500.0 | 326.0 |  |  |  | 158.0 (every window) | 16.0 (3.2 %) |" in md
    csv, _ = tables.table_bytes("time_breakdown", rep.time_breakdown)
    assert csv.decode().splitlines()[0].split(",") == tables.COLUMNS["time_breakdown"]


def test_the_pre_flight_before_the_first_step_is_the_harness_s(tmp_path):
    """timings["checks"] (vLLM's pre-flight, the model, the prompts' lengths, the inputs: before timings["total"]
    begins) goes into the method's total and its harness, and its part is named beside the share."""
    run_dir = tmp_path / "t"
    run_dir.mkdir()
    write_method(run_dir, "baseline", baseline=None, k=None, cells={("code", 1): [(10.0, 100.0, {})]}, texts=TEXTS)
    manifest(run_dir, {"baseline": {"status": "ok", "dir": "baseline", "error": None}})
    _timed(run_dir, "baseline", 100.0, 180.0, {"warmup": 4.0, "acceptance": 20.0, "bench": 40.0}, None, checks=20.0)
    rep = build.build(run_dir, with_plots=False)
    (row,) = rep.time_breakdown
    assert row["total_s"] == pytest.approx(200.0) and row["checks_s"] == 20.0
    assert row["harness_s"] == pytest.approx(36.0) and row["harness_share"] == pytest.approx(0.18)
    md = render.render_markdown(sections.blocks(rep))
    assert "| baseline | 200.0 | 100.0 | 4.0 | 20.0 | 0.0 | 40.0 | 36.0 (18.0 %; pre-flight 20.0) |" in md


def test_a_held_server_s_imports_beside_the_pre_flight_are_its_start_not_the_harness_s(tmp_path):
    """The server started held while the pre-flight ran imported vLLM for 18 of its 20 s: those seconds are the
    start's (it could not serve sooner), the other 2 the harness's; the pre-flight's whole 20 s stay named."""
    run_dir = tmp_path / "t"
    run_dir.mkdir()
    write_method(run_dir, "baseline", baseline=None, k=None, cells={("code", 1): [(10.0, 100.0, {})]}, texts=TEXTS)
    manifest(run_dir, {"baseline": {"status": "ok", "dir": "baseline", "error": None}})
    startup = {"mode": "compile", "to_engine": 1.0, "load": 2.0, "compile": 17.0, "warmup": 40.0}
    _timed(
        run_dir,
        "baseline",
        70.0,
        180.0,
        {"warmup": 4.0, "acceptance": 20.0, "bench": 40.0},
        startup | {"graph_capture": 2.0, "total": 66.0},
        checks=20.0,
        held=18.0,
    )
    rep = build.build(run_dir, with_plots=False)
    (row,) = rep.time_breakdown
    assert row["total_s"] == pytest.approx(200.0) and row["server_start_s"] == pytest.approx(88.0)
    assert row["startup_held_s"] == 18.0 and row["startup_process_s"] == pytest.approx(4.0)  # of the 70 s after it
    assert row["harness_s"] == pytest.approx(48.0) and row["harness_share"] == pytest.approx(0.24)
    md = render.render_markdown(sections.blocks(rep))
    assert (
        "| baseline | 200.0 | 88.0 (18.0 / 4.0 / 1.0 / 2.0 / 17.0 / 40.0 / 2.0) | 4.0 | 20.0 | 0.0 | 40.0 | "
        "48.0 (24.0 %; pre-flight 20.0) |" in md
    )


def test_a_bundle_without_timings_has_no_breakdown(tmp_path):
    run_dir = tmp_path / "old"
    run_dir.mkdir()
    write_method(run_dir, "baseline", baseline=None, k=None, cells={("code", 1): [(10.0, 100.0, {})]}, texts=TEXTS)
    manifest(run_dir, {"baseline": {"status": "ok", "dir": "baseline", "error": None}})
    rep = build.build(run_dir, with_plots=False)
    assert rep.time_breakdown == [] and "Where the run's time went" not in render.render_markdown(sections.blocks(rep))


def test_a_sweep_s_time_outside_its_methods_is_a_harness_row_and_the_total_is_its_wall_time(tmp_path):
    """The manifest's sweep_time (results/sweep_time.py): from the process's start (2 s of start-up) to the report's,
    530 s, of which the two methods' rows hold 500 s: the other 30 s are a row of their own, all harness, and the
    last row is the whole sweep, its harness share counting them."""
    run_dir = tmp_path / "t"
    run_dir.mkdir()
    write_method(run_dir, "baseline", baseline=None, k=None, cells={("code", 1): [(10.0, 100.0, {})]}, texts=TEXTS)
    write_method(
        run_dir, "ngram", baseline="baseline", cells={("code", 1): [(8.0, 120.0, {"acc_len": 2.0})]}, texts=TEXTS
    )
    record = SweepTime(
        process_started=1000.0, began=1002.0, methods_ended=1530.0, methods=("baseline", "ngram"), methods_s=500.0
    )
    manifest(
        run_dir,
        {m: {"status": "ok", "dir": m, "error": None} for m in ("baseline", "ngram")},
        sweep_time=record.to_json(),
    )
    _timed(run_dir, "baseline", 200.0, 280.0, {"warmup": 4.0, "acceptance": 20.0, "bench": 40.0}, None, checks=20.0)
    _timed(run_dir, "ngram", 100.0, 200.0, {"warmup": 3.0, "acceptance": 30.0, "bench": 61.0}, None)
    rep = build.build(run_dir, with_plots=False)
    *methods, outside = rep.time_breakdown
    assert [r["method"] for r in methods] == ["baseline", "ngram"] and outside["method"] == time_breakdown.OUTSIDE
    assert outside["total_s"] == outside["harness_s"] == pytest.approx(30.0) and outside["windows_s"] == 0.0
    whole = time_breakdown.totals(rep.time_breakdown)
    assert whole is not None and whole["total_s"] == pytest.approx(record.wall_s)
    assert whole["harness_s"] == pytest.approx(36.0 + 6.0 + 30.0)  # baseline's, ngram's, outside
    md = render.render_markdown(sections.blocks(rep))
    assert "| outside the methods (start-up 2.0 s) | 30.0 |  |  |  |  |  | 30.0 (all of it) |" in md
    assert (
        "| the sweep, from its start to its report | 530.0 | 300.0 |  |  |  | 158.0 (every window) | 72.0 (13.6 %) |"
        in md
    )
    csv, _ = tables.table_bytes("time_breakdown", rep.time_breakdown)
    assert (
        csv.decode().splitlines()[-1].startswith(f"{time_breakdown.OUTSIDE},outside the methods (start-up 2.0 s),30.0,")
    )
    # a bundle without the record (or with one that does not read as one) has the methods' rows alone
    manifest(run_dir, {m: {"status": "ok", "dir": m, "error": None} for m in ("baseline", "ngram")}, sweep_time={})
    rows = build.build(run_dir, with_plots=False).time_breakdown
    assert [r["method"] for r in rows] == ["baseline", "ngram"]
