"""Replication by server sessions on real vLLM (CPU, tiny models): `sweep --repeats 3 --replicate sessions`.

Oracles: the servers start in the interleaved ABBA order (B M, M B, B M) and the manifest lists the sessions in
that order, each session is a folder of its own holding one bench repeat, the report reads them as one method per
name, and its interval is the paired bootstrap of the session pairs recomputed here from the raw bench JSON."""

from __future__ import annotations

import json
import statistics

import pytest

from specstack import events
from specstack.compare import build as compare
from specstack.figures import stats as st
from specstack.pipeline.sweep import sweep
from specstack.report import build as report

from .conftest import sweep_options

pytestmark = pytest.mark.integration

SESSIONS = 3


@pytest.fixture(scope="module")
def sessions_run(models_dir, tmp_path_factory):
    results = tmp_path_factory.mktemp("sessions")
    opts = sweep_options(
        models_dir,
        results,
        "it-sessions",
        tasks=("code",),
        num_prompts=4,
        perf_output_len=24,
        acceptance_max_tokens=24,
        concurrencies=(1,),
        warmup_requests=1,
        repeats=SESSIONS,
        replicate="sessions",
    )
    recorder = events.Recorder()
    with events.listening(recorder):
        summaries = sweep(opts, ["ngram", "baseline"], report=False)
    return {"run_dir": results / "it-sessions", "summaries": summaries, "events": recorder}


def test_sessions_interleave_with_the_baseline(sessions_run):
    order = [
        f"{m}-s{s}" for s in range(1, SESSIONS + 1) for m in (("baseline", "ngram") if s % 2 else ("ngram", "baseline"))
    ]
    assert [e["method"] for e in sessions_run["events"].named("server.ready")] == order
    manifest = json.loads((sessions_run["run_dir"] / "manifest.json").read_text())
    assert list(manifest["methods"]) == order and manifest["workload"]["session_order"] == "ABBA"
    for s in sessions_run["summaries"]:
        assert s["status"] == "ok" and s["crosscheck"]["ok"], (s["method"], s["error"])
        assert s["replication"]["design"] == "sessions" and s["replication"]["sessions"] == SESSIONS
        assert [w["name"] for w in s["windows"] if w["phase"] == "bench"] == ["bench/code-c1-r0"]


def test_the_interval_resamples_session_pairs(sessions_run):
    run_dir = sessions_run["run_dir"]
    rep = report.build(run_dir, with_plots=False)
    assert list(rep.run.methods) == ["baseline", "ngram"] and not rep.run.warnings
    row = next(r for r in rep.speed if r["method"] == "ngram")
    assert row["design"] == f"{SESSIONS} server sessions paired with the baseline's" and row["repeats"] == SESSIONS

    # the latency ratio rests on TPOT, or on E2EL where TPOT is degenerate (answers read in a burst): either way
    # it is the median ratio with a paired bootstrap over the session pairs
    key = "p50_e2el_ms" if row["tpot_degenerate"] else "p50_tpot_ms"

    def latency(method, s):
        return json.loads((run_dir / f"{method}-s{s}" / "bench" / "code-c1-r0.json").read_text())[key]

    pairs = [(latency("baseline", s), latency("ngram", s)) for s in range(1, SESSIONS + 1)]
    want = st.paired_bootstrap_ratio(pairs)
    assert row["latency_speedup"] == pytest.approx(
        statistics.median(p[0] for p in pairs) / statistics.median(p[1] for p in pairs), rel=1e-12
    )
    assert (row["latency_speedup_low"], row["latency_speedup_high"]) == pytest.approx((want.low, want.high), rel=1e-12)


def test_compare_predicts_from_the_session_pairs(sessions_run, tmp_path):
    """`specstack compare` of the run with itself: A's prediction interval is the paired one of the session pairs
    recomputed here from the raw bench JSON, and B (the same run) lies inside it."""
    run_dir = sessions_run["run_dir"]
    cmp = compare.compare(run_dir, run_dir, with_plots=False)
    row = next(r for r in cmp.speedups if r["figure"] == "throughput")
    assert row["design_a"] == f"{SESSIONS} server sessions paired with the baseline's"

    def tput(method, s):
        return json.loads((run_dir / f"{method}-s{s}" / "bench" / "code-c1-r0.json").read_text())["output_throughput"]

    want = st.prediction_ratio(pairs=[(tput("ngram", s), tput("baseline", s)) for s in range(1, SESSIONS + 1)])
    assert want is not None
    assert (row["a_predicted_low"], row["a_predicted_high"]) == pytest.approx(want, rel=1e-12)
    assert row["verdict"] == "inside A's prediction interval" and row["a_predicted_low"] <= row["b"]
