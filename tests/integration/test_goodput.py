"""Goodput under per-request targets on the real sweep of every method (--slo; real vLLM on the CPU, tiny
models): every bench cell's goodput, computed from bench's per-request results, equals bench's own
`request_goodput` with the same targets, and the report shows it."""

from __future__ import annotations

import json

import pytest

from specstack.measure.goodput import figures
from specstack.report import build, render, sections

from .conftest import SLO, WORKLOAD

pytestmark = pytest.mark.integration


def test_every_bench_cell_has_a_goodput_equal_to_bench_own(sweep_run):
    run_dir, summaries = sweep_run["run_dir"], sweep_run["summaries"]
    cells = 0
    for name, s in summaries.items():
        for task, t in s["tasks"].items():
            for cell in t["bench"]:
                raw = json.loads((run_dir / name / cell["file"]).read_text())
                g = cell["goodput"]
                assert g == figures(raw, SLO) and g["slo"] == SLO
                assert g["completed"] == raw["completed"] == WORKLOAD["num_prompts"]
                assert 0 <= g["good"] <= g["completed"] and g["share"] == g["good"] / g["completed"]
                assert g["goodput"] == raw["request_goodput"] == g["good"] / raw["duration"], (name, task, cell)
                cells += 1
        bench_windows = [w for w in s["windows"] if w["phase"] == "bench"]
        checks = [c for w in bench_windows for c in w["checks"] if "goodput" in c["name"] or "per-request" in c["name"]]
        assert len(checks) == 2 * len(bench_windows) and all(c["ok"] for c in checks), name
    assert cells == len(summaries) * 2 * len(WORKLOAD["concurrencies"])  # every method, both tasks, every c


def test_the_report_shows_goodput_per_cell(sweep_run):
    rep = build.build(sweep_run["run_dir"], with_plots=False)
    md = render.render_markdown(sections.blocks(rep))
    assert md.count("Goodput under the SLO (ttft ≤ 2000 ms, tpot ≤ 100 ms, per request)") == 2  # code, chat
    rows = [c for c in rep.cells if c["task"] == "code"]
    assert all(c["request_goodput"] == c["bench_request_goodput"] for c in rows)
