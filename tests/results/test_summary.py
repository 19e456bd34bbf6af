"""The summary's typed records (results/summary.py): every summary a bundle holds reads into them and writes back
the same JSON (same keys, same values), whichever version wrote it; the typed attributes are what the keys say."""

from __future__ import annotations

import dataclasses
import json

import pytest

from specstack.figures.bench_cell import cell_figures as _bench_cell
from specstack.measure.windows import Window as MeasuredWindow
from specstack.results import reader
from specstack.results.bundle import SUMMARY_SCHEMA
from specstack.results.summary import (
    BenchCell,
    CrossCheck,
    PhaseFigures,
    PrometheusView,
    Server,
    Summary,
    TaskFigures,
    Window,
)
from specstack.runs.method_summary import _acceptance
from tests.bundles import bench_json, make_run, manifest, per_request_lists, write_k_sweep, write_method

pytestmark = pytest.mark.unit


def _summaries(run_dir):
    return sorted(run_dir.glob("*/summary.json"))


def _round_trips(data: dict) -> Summary:
    s = Summary.from_json(data)
    assert s.to_json() == data
    assert json.dumps(s.to_json()) == json.dumps(data)  # byte for byte: the keys in the order read
    return s


def test_every_summary_of_a_constructed_run_round_trips_on_disk_and_migrated(tmp_path):
    run = make_run(tmp_path, "a")
    paths = _summaries(run)
    assert [p.parent.name for p in paths] == ["baseline", "ngram"]
    for path in paths:
        _round_trips(json.loads(path.read_text()))  # as written (summary/1)
        _round_trips(reader.read_summary(path.parent))  # as the reader hands it on (migrated to /3)


def test_open_loop_cells_k_sweeps_and_sessions_round_trip(tmp_path):
    run = tmp_path / "r"
    cells = {
        ("code", 1): [(10.0, 100.0, {"acc_len": 2.0})] * 2,
        ("code", ("rate", 0.5)): [(12.0, 50.0, {})],
        ("code", ("probe", 1.5)): [(14.0, 60.0, {})],
    }
    write_method(run, "baseline", baseline=None, k=None, cells=cells, texts={"code": {"a": ("x y", "stop")}})
    for s in (1, 2):
        write_method(
            run,
            "ngram",
            folder=f"ngram-s{s}",
            baseline="baseline",
            cells=cells,
            texts={"code": {"a": ("x y", "length")}},
            spec_override={"num_speculative_tokens": 2},
            replication={"design": "sessions", "session": s, "sessions": 2, "of": "ngram"},
            server={"vllm_version": "0.32.0", "model_runner": "V2"},
            base_method="ngram",
        )
    write_k_sweep(tmp_path / "k", {0: {1: 100.0}, 2: {1: 150.0, 4: 300.0}})
    for path in _summaries(run) + _summaries(tmp_path / "k"):
        _round_trips(reader.read_summary(path.parent))
    manifest(run, {})
    merged = reader.load_run(run).methods["ngram"]
    _round_trips(merged.summary)  # the sessions merged into one method


def _full_summary() -> dict:
    """Every key runs/ writes, built with runs/ and measure/'s own pieces where they are importable."""
    bench = bench_json(10.0, 100.0, acc_len=2.5, c=4, requests=per_request_lists([40.0] * 2, [[10.0] * 3] * 2))
    cell = dict(
        concurrency=4,
        request_rate=None,
        load="concurrency",
        repeat=0,
        status="ok",
        file="bench/code-c4-r0.json",
        **_bench_cell(bench, {"ttft": 100.0}, 4),
        prefix_cache={"hit_rate": None},
    )
    figures = {
        "acceptance_rate": 0.5,
        "mean_acceptance_length": 2.0,
        "histogram": [1, 1, 2],
        "steps": 4,
        "draft_tokens": 8,
        "accepted": 4,
        "per_position_rates": [0.75, 0.5],
        "per_position_conditional_rates": [0.75, 0.66],
        "drafted_per_position": [4, 4],
        "no_accept_share": 0.25,
    }
    acc = _acceptance(figures)
    window = MeasuredWindow(
        name="acceptance/code",
        phase="acceptance",
        task="code",
        start=1.0,
        end=2.0,
        counters={"counters": {"vllm:num_preemptions": 0.0}, "split": {}},
        from_responses=figures,
        checks=[{"name": "drafts", "ok": True}],
        host_load={"cores": 2, "open": 0.1, "close": 0.2},
    ).to_dict()
    window["prefix_cache"] = {"hit_rate": 0.0}
    return {
        "schema": SUMMARY_SCHEMA,
        "run_id": "r",
        "method": "ngram",
        "label": "ngram (prompt lookup)",
        "base_method": "ngram",
        "baseline_method": "baseline",
        "status": "ok",
        "error": None,
        "error_type": None,
        "speculative_config": {"method": "ngram", "num_speculative_tokens": 2},
        "speculative_config_source": "the plan specstack started",
        "spec_override": None,
        "comparable": True,
        "server": {
            "target": "/models/tiny",
            "kv_cache_tokens": 1000,
            "observed": {"metrics": {}},
            "model_runner": "V1",
            "evidence": {"model_runner": {"basis": "observed", "line": "V1"}},
            "runtime": "native",
            "argv": ["vllm", "serve"],
        },
        "prefix_caching": {"option": None, "serve_flag": None, "observed": None},
        "asked_for": {"method": "ngram", "argv": ["--x"]},
        "server_contradictions": None,
        "tasks": {
            "code": {
                **acc,
                "requests": 1,
                "completion_tokens": 3,
                "finish_reasons": {"stop": 1},
                "categories": {"writing": {"requests": 1, **acc}},
                "bench": [cell],
                "sampled": {"0.6": {"temperature": 0.6, "status": "ok", **acc, "categories": {}}},
                "turns": {
                    "2": {
                        "turn": 2,
                        "status": "ok",
                        "file": "inputs/code.turn2.baseline.jsonl",
                        "sha256": "a" * 64,
                        "answers_from": "baseline",
                        "requests": 1,
                        "left_out": 0,
                        **acc,
                        "categories": {},
                    }
                },
                "prefix_cache": {"hit_rate": 0.0},
            }
        },
        "windows": [window],
        "timings": {"total": 3.5},
        "replication": {"design": "repeats", "repeats": 1},
        "prometheus_view": {"status": "pending", "tasks": {}},
        "crosscheck": {"ok": True, "checks": 1, "mismatches": [], "allowed": False},
        "provenance": {"vllm_client": "0.32.0"},
        "sampler_probe": {"status": "not run"},
        "turn2_inputs": {},
        "load": {"burstiness": 1.0, "tasks": {}},
        "a_key_from_a_later_specstack": [1],
    }


def test_a_summary_with_every_key_round_trips_and_reads_as_typed_records():
    data = _full_summary()
    s = _round_trips(data)
    assert not s.absent and s.extra == {"a_key_from_a_later_specstack": [1]}
    code = s.task_figures["code"]
    assert isinstance(code, TaskFigures) and code.num_draft_tokens == 8 and code.per_position == [0.75, 0.5]
    assert code.drafted and code.category_figures["writing"] == PhaseFigures.from_json(
        {
            "requests": 1,
            **_acceptance(
                {
                    "acceptance_rate": 0.5,
                    "mean_acceptance_length": 2.0,
                    "histogram": [1, 1, 2],
                    "steps": 4,
                    "draft_tokens": 8,
                    "accepted": 4,
                    "per_position_rates": [0.75, 0.5],
                    "per_position_conditional_rates": [0.75, 0.66],
                    "drafted_per_position": [4, 4],
                    "no_accept_share": 0.25,
                }
            ),
        }
    )
    assert [(p.temperature, p.status, p.num_accepted_draft_tokens) for p in code.sampled_phases] == [(0.6, "ok", 4)]
    assert code.turn2 is not None and (code.turn2.turn, code.turn2.answers_from, code.turn2.left_out) == (
        2,
        "baseline",
        0,
    )
    cell = code.cells[0]
    assert isinstance(cell, BenchCell) and (cell.concurrency, cell.output_throughput, cell.closed_loop) == (
        4,
        100.0,
        True,
    )
    assert cell.figure("mean_tpot_ms") == 10.0 and cell.goodput is not None and cell.per_request is not None
    assert "mean_tpot_ms" in cell.extra and not set(cell.extra) & set(BenchCell.keys())
    w = s.window_list[0]
    assert isinstance(w, Window) and (w.name, w.checks_ok, w.host_load) == (
        "acceptance/code",
        True,
        {"cores": 2, "open": 0.1, "close": 0.2},
    )
    assert (s.server_facts.model_runner, s.server_facts.basis("model_runner"), s.server_facts.basis("x")) == (
        "V1",
        "observed",
        None,
    ) and s.server_facts.extra == {"runtime": "native", "argv": ["vllm", "serve"]}
    assert s.crosscheck is not None and (s.crosscheck.ok, s.crosscheck.checks, s.crosscheck.allowed) == (True, 1, False)
    assert (s.server_facts.kv_cache_tokens, s.speculative_config) == (
        1000,
        {"method": "ngram", "num_speculative_tokens": 2},
    )


def test_absent_keys_stay_absent_and_read_as_none():
    data = {"schema": SUMMARY_SCHEMA, "method": "m", "tasks": {"code": {"bench": [{"file": "bench/x.json"}]}}}
    s = _round_trips(data)
    assert "baseline_method" in s.absent and s.baseline_method is None and s.windows is None
    assert s.window_list == [] and s.server_facts.to_json() == {} and s.server_facts.target is None
    cell = s.task_figures["code"].cells[0]
    assert (cell.load, cell.closed_loop, cell.concurrency) == (None, True, None)
    assert TaskFigures.from_json({}).cells == [] and TaskFigures.from_json({}).to_json() == {}
    assert _round_trips({"tasks": None, "windows": None}).task_figures == {}


def test_records_are_frozen_and_replace_makes_a_changed_copy():
    s = Summary.from_json(_full_summary())
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.method = "other"  # type: ignore[misc]
    t = dataclasses.replace(s, method="other")
    assert t.to_json() == {**_full_summary(), "method": "other"} and s.method == "ngram"


def test_records_built_by_hand_write_every_named_key():
    cell = BenchCell(concurrency=1, repeat=0, file="bench/c.json")
    out = cell.to_json()
    assert set(out) == set(BenchCell.keys()) and out["concurrency"] == 1 and out["load"] is None
    s = Summary(method="m", tasks={"code": TaskFigures(bench=[cell])})
    assert s.to_json()["tasks"]["code"]["bench"] == [out]
    assert Summary.from_json(s.to_json()) == s


def test_records_made_by_runs_write_exactly_the_keys_given_and_refuse_an_unnamed_one():
    """`make` (how runs/ builds the summary): the keys given, in their order, then the extra ones; a key the record
    does not name is an error where it is written, not an extra found later."""
    cell = BenchCell.make(repeat=0, concurrency=1, extra={"mean_tpot_ms": 5.0})
    assert json.dumps(cell.to_json()) == json.dumps({"repeat": 0, "concurrency": 1, "mean_tpot_ms": 5.0})
    assert cell.session is None and "session" in cell.absent and cell.figure("mean_tpot_ms") == 5.0
    with pytest.raises(TypeError, match="TaskFigures names no key acceptance_rat "):
        TaskFigures.make(acceptance_rat=0.5)
    s = Summary.make(
        method="m",
        tasks={"code": TaskFigures.make(bench=[cell])},
        prometheus_view=PrometheusView.make(status="not collected", tasks={}),
    )
    assert s.to_json() == {
        "method": "m",
        "tasks": {"code": {"bench": [cell.to_json()]}},
        "prometheus_view": {"status": "not collected", "tasks": {}},
    }
    assert Summary.from_json(s.to_json()).to_json() == s.to_json()


def test_updated_writes_the_json_a_dict_filled_in_by_key_would():
    """`updated` (how runs/ fills the summary in while a method runs): a key held keeps its place, a new one (a
    named key made absent, or an extra) follows in the order given, so the file is what the dict wrote."""
    as_dict = {"method": "m", "status": "running", "error": None, "tasks": {}}
    s = Summary.make(method="m", status="running", error=None, tasks={})
    as_dict["crosscheck"] = {"ok": True}
    as_dict["error"], as_dict["error_type"] = "boom", "Boom"
    as_dict["turn2_inputs"] = {"code": {}}
    as_dict["status"] = "failed"
    s = s.updated(crosscheck=CrossCheck.make(ok=True)).updated(error="boom", error_type="Boom")
    s = s.updated(turn2_inputs={"code": {}}).updated(status="failed")
    assert json.dumps(s.to_json()) == json.dumps(as_dict)
    assert s.written() == tuple(as_dict) and "error_type" not in s.absent


def test_updated_keeps_a_hand_built_records_order_and_takes_unnamed_keys_only_as_extra():
    server = Server(target="t")
    out = server.updated(vllm_version="0.1", extra={"startup": {"mode": "eager"}}).to_json()
    assert list(out) == [*Server.keys(), "startup"] and out["vllm_version"] == "0.1"
    read = Server.from_json({"runtime": "url", "observed": {}})
    assert list(read.updated(extra={"stop_problem": "x", "runtime": "native"}).to_json()) == [
        "runtime",
        "observed",
        "stop_problem",
    ]
    with pytest.raises(TypeError, match="Server names no key startup "):
        server.updated(startup={})
    with pytest.raises(TypeError, match="Server names target: not an extra"):
        server.updated(extra={"target": "x"})
    assert server.target == "t" and server.vllm_version is None  # frozen: a copy each time


def test_merged_writes_what_updating_the_json_dict_would():
    facts = {"runtime": "native", "vllm_version": "0.1", "pid": 7}
    log = {"kv_cache_tokens": 512, "engine": "x", "vllm_version": "0.2", "model_runner": "V1"}
    merged = Server.from_json(facts).merged(log)
    assert json.dumps(merged.to_json()) == json.dumps({**facts, **log})
    assert merged.kv_cache_tokens == 512 and merged.extra == {"runtime": "native", "pid": 7, "engine": "x"}
    cells = TaskFigures.make(requests=1).merged({"bench": [{"file": "bench/x.json"}]}).cells
    assert cells == [BenchCell.from_json({"file": "bench/x.json"})]  # nested records read as from_json reads them


def test_the_nested_objects_read_as_records():
    """Prometheus's view, the provenance, the sampler probe and the open-loop load: attributes, not look-ups."""
    data = {
        **_full_summary(),
        "prometheus_view": {
            "status": "checked",
            "tasks": {"code": {"status": "ok"}, "chat": {"status": "missing", "reason": "no samples"}},
        },
        "provenance": {"vllm_client": "0.32.0", "host": {"cpu": {"cores": 2}}},
        "sampler_probe": {"verdict": "fail", "where": "native", "failing_shapes": ["k2"]},
        "load": {
            "burstiness": 1.0,
            "max_concurrency": 8,
            "tasks": {
                "code": {"rates": [0.5, 1.0], "rates_from": "--rates", "capacity": {"kind": "bracket", "rate": 0.5}}
            },
        },
    }
    s = _round_trips(data)
    assert s.prometheus_view is not None and s.prometheus_view.missing == {"chat": "no samples"}
    assert s.provenance_facts.vllm_client == "0.32.0" and s.provenance_facts.host_facts == {"cpu": {"cores": 2}}
    assert s.sampler_probe is not None and (s.sampler_probe.verdict, s.sampler_probe.failing_shapes) == ("fail", ["k2"])
    code = s.load_figures.task_loads["code"]
    assert (s.load_figures.max_concurrency, code.rates, code.capacity) == (
        8,
        [0.5, 1.0],
        {"kind": "bracket", "rate": 0.5},
    )
    empty = Summary.from_json({})
    assert (empty.load_figures.task_loads, empty.provenance_facts.host_facts) == ({}, {})


def test_the_reader_hands_each_method_its_typed_summary(tmp_path):
    run = reader.load_run(make_run(tmp_path, "a"))
    for md in run.methods.values():
        assert md.record == Summary.from_json(md.summary) and md.record.to_json() == md.summary
        assert md.task_figures.keys() == md.tasks.keys()
        assert [c.to_json() for c in md.figures("code").cells] == md.tasks["code"]["bench"]
        assert md.figures("no such task") == TaskFigures.from_json({}) and md.figures("no such task").to_json() == {}
    assert (run.methods["ngram"].baseline, run.methods["ngram"].k, run.methods["baseline"].speculative) == (
        "baseline",
        4,
        False,
    )
    assert reader.load_text({"load": "rate", "request_rate": 0.5}) == "0.5 req/s"
    assert [reader.load_text(c) for c in ({"concurrency": 4}, {"load": "probe", "request_rate": 1.5})] == [
        "c=4",
        "1.5 req/s probe",
    ]


def test_merged_sessions_keep_every_key_of_the_first_and_add_only_what_merging_sets(tmp_path):
    run = tmp_path / "r"
    cells = {("code", 1): [(10.0, 100.0, {})]}
    for s, extra in ((1, {}), (2, {("chat", 1): [(11.0, 90.0, {})]})):  # a task only the second session ran
        write_method(
            run,
            "ngram",
            folder=f"ngram-s{s}",
            baseline=None,
            k=None,
            cells={**cells, **extra},
            texts={},
            replication={"design": "sessions", "session": s, "sessions": 2, "of": "ngram"},
        )
    first = reader.read_summary(run / "ngram-s1")
    merged = reader.load_run(run).methods["ngram"].summary
    assert set(merged) == set(first) and set(merged["tasks"]["code"]) == set(first["tasks"]["code"])
    assert merged["tasks"]["chat"] == {
        "bench": [
            {
                **reader.read_summary(run / "ngram-s2")["tasks"]["chat"]["bench"][0],
                "repeat": 1,
                "session": 2,
                "file": "../ngram-s2/bench/chat-c1-r0.json",
            }
        ]
    }
    assert [(c["repeat"], c["session"]) for c in merged["tasks"]["code"]["bench"]] == [(0, 1), (1, 2)]
    md = reader.load_run(run).methods["ngram"]
    assert (md.replication.design, md.replication.session, md.replication.sessions_ok, md.folders) == (
        "sessions",
        None,
        2,
        ["ngram-s1", "ngram-s2"],
    )
    assert merged["replication"] == {
        "design": "sessions",
        "session": None,
        "sessions": 2,
        "of": "ngram",
        "sessions_ok": 2,
        "folders": ["ngram-s1", "ngram-s2"],
    }


def test_a_merge_of_sessions_without_tasks_writes_no_tasks(tmp_path):
    for s in (1, 2):
        (tmp_path / f"m-s{s}").mkdir()
        (tmp_path / f"m-s{s}" / "summary.json").write_text(
            json.dumps(
                {
                    "schema": SUMMARY_SCHEMA,
                    "method": f"m-s{s}",
                    "status": "ok",
                    "windows": [],
                    "replication": {"design": "sessions", "session": s, "of": "m"},
                }
            )
        )
    merged = reader.load_run(tmp_path).methods["m"].summary
    assert "tasks" not in merged and merged["replication"]["folders"] == ["m-s1", "m-s2"]
