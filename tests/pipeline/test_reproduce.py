"""`specstack reproduce` without a server: what it plans from a bundle, what it refuses, and how it judges a
comparison (the real re-run: tests/integration/test_reproduce.py)."""

from __future__ import annotations

import json
import shutil

import pytest

from specstack.compare.build import compare
from specstack.errors import UserError
from specstack.pipeline import reproduce
from specstack.runs import drift
from tests.bundles import make_run, perturb

pytestmark = pytest.mark.unit


def _with_inputs(run):
    """make_run's manifest names inputs by a made-up sha256: write real files and record theirs."""
    from specstack.config.workloads import sha256

    manifest = json.loads((run / "manifest.json").read_text())
    (run / "inputs").mkdir()
    manifest["inputs"] = {}
    for rel in [f"inputs/{t}.{k}.jsonl" for t in ("code", "chat") for k in ("perf", "acceptance")]:
        (run / rel).write_text(f'{{"prompt": "{rel}"}}\n')
        manifest["inputs"][rel] = sha256(run / rel)
    (run / "manifest.json").write_text(json.dumps(manifest))
    return run


def test_a_run_plans_one_entry_per_successful_method_in_run_order(tmp_path):
    run = make_run(tmp_path, "orig")
    p = reproduce.plan(run, run_id="again", results_dir=tmp_path)
    assert [n for n, _ in p.entries] == ["baseline", "ngram"]
    ngram = dict(p.entries)["ngram"]
    assert (ngram.method, ngram.run_id, ngram.tasks, ngram.concurrencies, ngram.repeats) == (
        "ngram",
        "again",
        ("code", "chat"),
        (1, 4),
        3,
    )
    assert "warmup_requests" in p.not_recorded  # make_run writes a manifest without a recipe
    assert [n for n, _ in reproduce.plan(run, run_id="a", results_dir=tmp_path, methods=["ngram"]).entries] == ["ngram"]
    with pytest.raises(UserError, match="--methods names eagle3, not in orig"):
        reproduce.plan(run, run_id="a", results_dir=tmp_path, methods=["eagle3"])


def test_a_failed_method_is_skipped_with_why_and_an_attached_run_is_refused(tmp_path):
    run = make_run(tmp_path, "orig")
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["methods"]["suffix"] = {"status": "failed", "dir": "suffix.failed-1", "error": "boom"}
    (run / "manifest.json").write_text(json.dumps(manifest))
    assert reproduce.plan(run, run_id="a", results_dir=tmp_path).skipped == [
        "suffix: failed in the original (no figures to compare with)"
    ]
    manifest["recipe"] = {"runtime": "url", "url": "http://127.0.0.1:9"}
    (run / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(UserError, match="runtime 'url'.*native runs only"):
        reproduce.plan(run, run_id="a", results_dir=tmp_path)


def test_inputs_are_checked_by_sha256_and_copied(tmp_path):
    run = _with_inputs(make_run(tmp_path, "orig"))
    p = reproduce.plan(run, run_id="again", results_dir=tmp_path)
    new = tmp_path / "again"
    reproduce.copy_inputs(p, new)
    assert (new / "inputs" / "code.perf.jsonl").read_bytes() == (run / "inputs" / "code.perf.jsonl").read_bytes()
    assert dict(p.entries)["ngram"].workload_files["code"] == (
        new / "inputs" / "code.perf.jsonl",
        new / "inputs" / "code.acceptance.jsonl",
    )
    (run / "inputs" / "chat.perf.jsonl").write_text('{"prompt": "edited"}\n')
    with pytest.raises(UserError, match="chat.perf.jsonl changed since orig was run"):
        reproduce.copy_inputs(reproduce.plan(run, run_id="b", results_dir=tmp_path), tmp_path / "b")
    (run / "inputs" / "chat.perf.jsonl").unlink()
    with pytest.raises(UserError, match="chat.perf.jsonl of orig is not on this machine"):
        reproduce.copy_inputs(reproduce.plan(run, run_id="c", results_dir=tmp_path), tmp_path / "c")


def test_drift_refuses_before_any_folder_is_written(tmp_path):
    run = _with_inputs(make_run(tmp_path, "orig"))
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["git_commit"] = "0" * 40
    (run / "manifest.json").write_text(json.dumps(manifest))
    p = reproduce.plan(run, run_id="again", results_dir=tmp_path)
    here = drift.Environment(commit="1" * 40, locks={}, packages=[], host={"machine": "x86_64"})
    with pytest.raises(UserError, match=r"specstack commit: 0{40} \(recorded\) → 1{40} \(here\)[\s\S]*--allow-drift"):
        reproduce.run(p, allow_drift=False, env=here)
    assert not (tmp_path / "again").exists()


def test_an_identical_run_is_judged_reproduced(tmp_path):
    run = make_run(tmp_path, "orig")
    shutil.copytree(run, tmp_path / "copy")
    v = reproduce.judge(compare(run, tmp_path / "copy", with_plots=False))
    assert v["reproduced"] and v["exact_ok"] and v["speed_ok"]
    exact = [r["figure"] for r in v["exact"]]
    assert "ngram code acceptance_length" in exact and "ngram code greedy outputs" in exact
    assert "ngram code c=1 bench_acceptance_length" in exact  # c=1: exact by design
    assert "ngram code c=4 bench_acceptance_length" not in exact  # batched: no promise (GPU kernels)
    assert {r["figure"].rsplit(" ", 1)[1] for r in v["speed"]} == set(reproduce.JUDGED_SPEED)


def test_changed_acceptance_counts_are_not_a_reproduction(tmp_path):
    run = make_run(tmp_path, "orig")
    v = reproduce.judge(compare(run, perturb(run, tmp_path / "perturbed", factor=0.8), with_plots=False))
    assert not v["reproduced"] and not v["exact_ok"] and v["speed_ok"]
    assert any(r["figure"] == "ngram code acceptance_length" and not r["ok"] for r in v["exact"])


def test_speed_beyond_the_tolerance_is_named_with_its_change(tmp_path):
    a, b = make_run(tmp_path, "a"), make_run(tmp_path, "b", speed=1.3)
    v = reproduce.judge(compare(a, b, with_plots=False), tolerance=0.15)
    assert v["exact_ok"] and not v["speed_ok"] and not v["reproduced"]
    moved = {r["figure"]: r for r in v["speed"] if not r["ok"]}
    assert moved["ngram code c=1 throughput"]["verdict"] == "moved +30.0 % (beyond ±15 %)"
    assert reproduce.judge(compare(a, b, with_plots=False), tolerance=0.35)["reproduced"]


def _row(relative, verdict="point only (1 repeats; an interval needs ≥ 3 a side)", note=None, figure="throughput"):
    return {"figure": figure, "relative": relative, "verdict": verdict, "comparable": True, "note": note}


def test_a_speed_figure_is_judged_by_its_interval_or_the_tolerance_and_not_on_a_busy_host():
    judge = reproduce._judge_speed
    assert judge(_row(0.1), 0.2) == {"ok": True, "verdict": "within ±20 %"}
    assert judge(_row(-0.3), 0.2) == {"ok": False, "verdict": "moved -30.0 % (beyond ±20 %)"}
    assert judge(_row(0.5, verdict="within noise"), 0.2)["ok"] is True  # the repeats' interval holds 1.0x
    assert judge(_row(0.5, verdict="changed (worse)"), 0.2)["ok"] is False
    busy = judge(_row(2.0, note="busy host (load per core 1.40/1.70 A/B > 1.25)"), 0.2)
    assert busy == {"ok": None, "verdict": "not judged: busy host (load per core 1.40/1.70 A/B > 1.25)"}
    degenerate = judge(
        _row(400.0, note="TPOT degenerate (answers arrived in a burst): read e2el_p50", figure="tpot_p50"), 0.2
    )
    assert degenerate["ok"] is None and "e2el_p50 is judged instead" in degenerate["verdict"]
    assert judge({**_row(None), "comparable": False, "verdict": "not comparable: other hardware"}, 0.2) == {
        "ok": False,
        "verdict": "not comparable: other hardware",
    }


def test_a_reproduction_never_writes_into_an_existing_run(tmp_path):
    run = _with_inputs(make_run(tmp_path, "orig"))
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "manifest.json").write_text("{}")
    same_host = drift.Environment(commit=None, locks={}, packages=[], host={"machine": "x86_64", "platform": "Linux"})
    with pytest.raises(UserError, match="taken exists; pick a new --run-id"):
        reproduce.run(reproduce.plan(run, run_id="taken", results_dir=tmp_path), allow_drift=False, env=same_host)
    assert (tmp_path / "taken" / "manifest.json").read_text() == "{}"


def test_a_compose_run_is_reproduced_one_server_at_a_time_into_one_run(tmp_path, monkeypatch):
    """`make reproduce` measures each method against the server it started (--url), into one reproduction,
    then compares once (--measured)."""
    run = _with_inputs(make_run(tmp_path, "orig"))
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["recipe"] = {"runtime": "url", "url": "http://vllm-ngram:8000", "tasks": ["code", "chat"]}
    (run / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(UserError, match="make reproduce RUN=results/orig"):
        reproduce.plan(run, run_id="again", results_dir=tmp_path)
    measured = []

    def fake_run_all(opts, entries, **kw):  # the server's measurement itself: tests/compose/test_reproduce.py
        for name, one in entries:
            measured.append((name, one.runtime, one.url, one.prometheus_url))
            shutil.copytree(run / name, tmp_path / "again" / name)
        return [{"method": n, "status": "ok"} for n, _ in entries]

    monkeypatch.setattr(reproduce, "run_all", fake_run_all)
    same = drift.Environment(commit=None, locks={}, packages=[], host={"machine": "x86_64", "platform": "Linux"})
    for name in ("baseline", "ngram"):
        p = reproduce.plan(
            run,
            run_id="again",
            results_dir=tmp_path,
            methods=[name],
            url=f"http://vllm-{name}:8000",
            watch={"prometheus_url": "http://prometheus:9090"},
        )
        out = reproduce.run(p, allow_drift=False, env=same)
        assert out["verdict"] is None and out["failed"] == []
    assert measured == [
        ("baseline", "url", "http://vllm-baseline:8000", "http://prometheus:9090"),
        ("ngram", "url", "http://vllm-ngram:8000", "http://prometheus:9090"),
    ]
    again = json.loads((tmp_path / "again" / "manifest.json").read_text())
    assert again["reproduction_of"]["folder"] == "orig"
    m = json.loads((tmp_path / "again" / "manifest.json").read_text())
    m["methods"] = {"baseline": {"status": "ok", "dir": "baseline"}, "ngram": {"status": "ok", "dir": "ngram"}}
    (tmp_path / "again" / "manifest.json").write_text(json.dumps(m))
    v = reproduce.conclude(run, tmp_path / "again")["verdict"]
    assert v["reproduced"] and v["exact_ok"] and v["failed"] == []
    with pytest.raises(UserError, match="orig is not a reproduction of again"):
        reproduce.conclude(tmp_path / "again", run)


def test_a_native_run_is_not_reproduced_against_someone_elses_server(tmp_path):
    run = make_run(tmp_path, "orig")
    with pytest.raises(UserError, match="orig ran natively: reproduce it without --url"):
        reproduce.plan(run, run_id="again", results_dir=tmp_path, url="http://127.0.0.1:9")
