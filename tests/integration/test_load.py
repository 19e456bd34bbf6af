"""Open-loop cells and the capacity at an SLO on real vLLM (CPU, tiny models): baseline and ngram, one task, two
offered rates and a bounded capacity search (ttft ≤ 500 ms for 70 % of the requests). Every cell, closed loop,
open loop and probe alike, carries bench's goodput equal to ours; each method's capacity is the bracket its own
cells give, its kind follows from that bracket, a found capacity is within the stated resolution; the report
has the Load section and its frontier plot.
Which rates meet a TTFT target is timing, and on two shared cores it is not repeatable: the SLO was first meant
to fail structurally at 2048 req/s (32 requests, 16 sequence slots) and pass at 16 req/s, but one clean CI run
measured ngram meeting it at 2048 req/s (72 %) and the baseline missing it at 16 req/s (62 %). So the test
asserts what must hold whatever the timing, not where the capacity lands."""

from __future__ import annotations

import json
import shlex

import pytest

from specstack.figures import capacity
from specstack.pipeline.sweep import sweep
from specstack.report import build, render, sections

from .conftest import sweep_options

pytestmark = pytest.mark.integration

SLO = {"ttft": 500.0}
SHARE, PROBES, RESOLUTION = 0.7, 4, 0.5
RATES = (16.0, 2048.0)
SMALL = dict(
    tasks=("code",),
    num_prompts=32,
    perf_output_len=256,
    acceptance_max_tokens=16,
    concurrencies=(16,),
    warmup_requests=1,
    rates=RATES,
    slo=SLO,
    capacity_share=SHARE,
    capacity_probes=PROBES,
    capacity_resolution=RESOLUTION,
)


@pytest.fixture(scope="module")
def load_run(models_dir, tmp_path_factory):
    results = tmp_path_factory.mktemp("load")
    summaries = sweep(sweep_options(models_dir, results, "it-load", **SMALL), ["baseline", "ngram"])
    assert [s["status"] for s in summaries] == ["ok", "ok"], [s["error"] for s in summaries]
    return results / "it-load", {s["method"]: s for s in summaries}


def test_every_cell_has_bench_goodput_equal_to_ours_and_rate_cells_send_at_their_rate(load_run):
    run_dir, summaries = load_run
    for name, s in summaries.items():
        cells = s["tasks"]["code"]["bench"]
        assert {c["load"] for c in cells} == {"concurrency", "rate", "probe"}, name
        for c in cells:
            g = c["goodput"]
            assert g["completed"] == c["completed"] == SMALL["num_prompts"], (name, c["file"])
            assert g["goodput"] == g["bench_request_goodput"] and g["slo"] == SLO, (name, c["file"])
            argv = shlex.split((run_dir / name / c["file"]).with_suffix(".cmd").read_text())
            if c["load"] == "concurrency":
                assert argv[argv.index("--max-concurrency") + 1] == "16"
            else:
                assert (
                    "--max-concurrency" not in argv
                    and float(argv[argv.index("--request-rate") + 1]) == c["request_rate"]
                )
        windows = [w for w in s["windows"] if w["phase"] == "bench"]
        assert len(windows) == len(cells) and all(w["status"] == "ok" and w["checks_ok"] for w in windows)
        assert all(any("goodput" in c["name"] for c in w["checks"]) for w in windows)


def test_each_method_capacity_is_bracketed_within_the_resolution_by_its_own_cells(load_run):
    _, summaries = load_run
    for name, s in summaries.items():
        cap = s["load"]["tasks"]["code"]["capacity"]
        shares = {}
        for c in s["tasks"]["code"]["bench"]:
            if c["load"] != "concurrency":
                shares.setdefault(c["request_rate"], []).append(c["goodput"]["share"])
        verdicts = {rate: capacity.passes(v, SHARE) for rate, v in shares.items()}
        assert [p["rate"] for p in cap["probes"]] == sorted(
            set(shares) - set(RATES), key=[p["rate"] for p in cap["probes"]].index
        ) and len(cap["probes"]) <= PROBES, name
        assert (cap["rate"], cap["bound"]) == capacity.bracket(verdicts), name
        # Which rates pass is timing on two shared cores (a clean CI run measured ngram meeting the SLO at
        # 2048 req/s with 72 % and the baseline missing it at 16 req/s with 62 %): the kind follows from the
        # cells, and a found capacity is within the stated resolution.
        assert cap["kind"] == capacity._kind(cap["rate"], cap["bound"], RESOLUTION), (name, cap["text"], shares)
        if cap["kind"] == "found":
            assert cap["bound"] <= cap["rate"] * (1 + RESOLUTION), name
        else:
            assert cap["kind"] in ("never", "at least") or len(cap["probes"]) == PROBES, (name, cap["text"])


def test_the_report_has_the_load_section_with_the_frontier(load_run):
    run_dir, _ = load_run
    rep = build.build(run_dir, with_plots=True)
    assert "report/frontier_code.png" in rep.plots and "report/speedup_vs_rate_code.png" in rep.plots
    assert {(r["method"], r["request_rate"]) for r in rep.rates} == {
        (m, r) for m in ("baseline", "ngram") for r in RATES
    }
    assert {r["method"] for r in rep.capacity} == {"baseline", "ngram"}
    ngram = next(r for r in rep.capacity if r["method"] == "ngram")
    if ngram["capacity_speedup"] is not None:  # both capacities bracketed (timing decides: see above)
        assert ngram["capacity_speedup_low"] <= ngram["capacity_speedup"] <= ngram["capacity_speedup_high"]
    md = render.render_markdown(sections.blocks(rep))
    assert "## Load" in md and "capacity at the SLO" in md and "frontier_code.png" in md
    recipe = json.loads((run_dir / "manifest.json").read_text())["recipe"]
    assert recipe["rates"] == list(RATES) and recipe["capacity_share"] == SHARE
