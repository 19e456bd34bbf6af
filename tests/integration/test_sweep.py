"""Every method end to end on real vLLM 0.32.0 (CPU) with tiny local models, scraped by a real Prometheus.

Oracles: all cross-check identities hold exactly; greedy outputs of every spec method equal its baseline's
request by request; plain decode reports "n/a", never 0 %; Prometheus stores the series with the method
label and its view of every window equals the collector's direct diff."""

from __future__ import annotations

import json

import pytest
from rich.console import Console

from specstack.config import methods, workloads
from specstack.report import console_table, time_breakdown
from specstack.results import reader
from specstack.results.summary import Summary
from specstack.results.sweep_time import SweepTime
from specstack.runs.demo import DEMO_METHODS
from specstack.server import held_serve
from tests.support import read_jsonl

from .conftest import HF_TOKEN_SENTINEL, WORKLOAD

pytestmark = pytest.mark.integration

SPEC_METHODS = [m for m in DEMO_METHODS if methods.is_speculative(m)]
PLAIN_METHODS = [m for m in DEMO_METHODS if not methods.is_speculative(m)]


def test_every_method_ran_with_exact_crosschecks(sweep_run):
    for name in DEMO_METHODS:
        s = sweep_run["summaries"][name]
        assert s["status"] == "ok", (name, s["error"])
        assert s["crosscheck"]["ok"], (name, s["crosscheck"]["mismatches"])
        assert (sweep_run["run_dir"] / name / "summary.json").exists()
        assert [w["name"] for w in s["windows"]] == ["warmup", "acceptance/code", "acceptance/chat"] + [
            f"bench/{t}-c{c}-r0" for t in ("code", "chat") for c in WORKLOAD["concurrencies"]
        ]
        assert all(w["status"] == "ok" for w in s["windows"])


def test_each_method_s_pre_flight_is_timed_and_is_the_harness_s(sweep_run):
    """#42: the steps before a method's first one (its checks, vLLM's pre-flight, its inputs) are in its
    timings["checks"] and in the breakdown's harness, not outside every row."""
    before: dict[str, float] = {}
    seconds = 0.0
    for event, f in sweep_run["events"].events:
        if event == "step.end" and f["name"] in ("checks", "preflight", "inputs"):
            seconds += f["seconds"]
        elif event == "method.start":
            before[f["method"]], seconds = seconds, 0.0
    rows = {r["method"]: r for r in time_breakdown.breakdown_rows(reader.load_run(sweep_run["run_dir"]))}
    for name in DEMO_METHODS:
        timings = sweep_run["summaries"][name]["timings"]
        assert 0 < before[name] <= timings["checks"] < before[name] + 1.0, (name, before[name], timings)
        row = rows[name]
        assert row["checks_s"] == timings["checks"]
        assert row["total_s"] == pytest.approx(timings["total"] + timings["checks"])
        # of the checks, the seconds the method's held server imported vLLM beside them are its start's
        held = timings["server_imports_beside_checks"]
        assert 0 <= held <= timings["checks"] and row["startup_held_s"] == held, (name, timings)
        assert row["server_start_s"] == pytest.approx(timings["server_ready"] + held)
        assert row["harness_s"] == pytest.approx(row["total_s"] - row["server_start_s"] - row["windows_s"])
    # the first server was started by its method's checks and imported through most of them (on this CPU its
    # imports outlast the pre-flight's); every later one had imported during the method before (next_server.py)
    first = sweep_run["summaries"][DEMO_METHODS[0]]["timings"]
    assert first["server_imports_beside_checks"] > 0.5 * first["checks"], first
    for name in DEMO_METHODS[1:]:
        assert sweep_run["summaries"][name]["timings"]["server_imports_beside_checks"] == 0.0, name


def test_the_sweep_s_time_outside_its_methods_is_recorded_and_closes_the_breakdown(sweep_run):
    """#42: the sweep loop records its wall time and what its methods' rows hold (results/sweep_time.py); the rest,
    outside every method (here the last Prometheus checks and the window exporter's final scrape after the last
    method), is the breakdown's last row, and the rows then add up to the sweep's wall time."""
    run = reader.load_run(sweep_run["run_dir"])
    record = SweepTime.from_manifest(run.manifest)
    assert record is not None and record.methods == tuple(DEMO_METHODS)
    assert record.startup_s == 0.0  # run in-process by a test, not by the console script: no start-up of its own
    at: dict[str, float] = {}
    for event, f in sweep_run["events"].events:  # the events' monotonic clock, against the record's wall clock
        if event in ("sweep.start", "sweep.end", "method.end"):
            at[event] = f["at"]
    assert record.wall_s == pytest.approx(at["sweep.end"] - at["sweep.start"], abs=0.5)
    timings = [s["timings"] for s in sweep_run["summaries"].values()]
    assert record.methods_s == pytest.approx(sum(t["checks"] + t["total"] for t in timings))
    assert 0 < at["sweep.end"] - at["method.end"] <= record.outside_s + 0.1, (record, at)  # the tail is outside
    rows = time_breakdown.breakdown_rows(run)
    assert [r["method"] for r in rows] == [*DEMO_METHODS, time_breakdown.OUTSIDE]
    assert rows[-1]["harness_s"] == pytest.approx(record.outside_s)
    whole = time_breakdown.totals(rows)
    assert whole is not None and whole["total_s"] == pytest.approx(record.wall_s)


def test_each_server_start_names_its_process_start_and_its_way_to_the_engine(sweep_run):
    """#42: the start's breakdown covers what vLLM's own phases leave out: the process's start and vLLM's imports
    before its first log line, and the way from that line to the engine core's first (on the CPU platform vLLM
    always spawns the engine core, which imports vLLM again). Each server's process was started held
    (server/held_serve.py): the first while its method's checks ran, every later one as the method before it
    started its own server (runs/next_server.py); its log says so before vLLM's first line, and the seconds it was
    held before its release (timings server_held) are not in its start."""
    rows = {r["method"]: r for r in time_breakdown.breakdown_rows(reader.load_run(sweep_run["run_dir"]))}
    for name in DEMO_METHODS:
        row = rows[name]
        process, to_engine, start = row["startup_process_s"], row["startup_to_engine_s"], row["server_start_s"]
        held = sweep_run["summaries"][name]["timings"]["server_held"]
        assert process is not None and to_engine is not None and held >= 0, (name, row, held)
        # a vLLM import takes seconds on this CPU, in the API server (held or not) and again in the engine core
        assert process + held > 1.0 and to_engine > 1.0 and process + to_engine < start, (name, process, held, row)
        log = (sweep_run["run_dir"] / name / "server.log").read_text(errors="replace")
        assert 0 <= log.find(held_serve.IMPORTED) < log.index("version 0.32.0"), (name, log[:1500])
    # the first server was held from before its method's checks (vLLM's pre-flight import among them) to after
    # them; their length, not a fixed second: a test process that imported vLLM already makes the pre-flight quick
    first = sweep_run["summaries"][DEMO_METHODS[0]]["timings"]
    assert first["server_held"] > first["checks"] > 0, first
    # every later server was held through the windows of the method before it, its imports done by its release:
    # what is left before vLLM's first line is shorter than the spawned engine core's import of vLLM
    for before, name in zip(DEMO_METHODS, DEMO_METHODS[1:]):
        held, previous = sweep_run["summaries"][name]["timings"], sweep_run["summaries"][before]["timings"]
        windows = previous["warmup"] + previous["acceptance"] + previous["bench"]
        assert held["server_held"] > windows, (name, held, previous)
        assert rows[name]["startup_process_s"] < rows[name]["startup_to_engine_s"], (name, rows[name])


def test_every_summary_reads_as_typed_records_and_writes_back_byte_for_byte(sweep_run):
    """Issue 31: results/summary.py's records hold every key a real run writes; to_json gives the file back, and
    the reader hands each method the same figures as records."""
    run = reader.load_run(sweep_run["run_dir"])
    for name in DEMO_METHODS:
        text = (sweep_run["run_dir"] / name / "summary.json").read_text()
        data = json.loads(text)
        assert json.dumps(Summary.from_json(data).to_json()) == json.dumps(data), name
        record = run.methods[name].record
        assert record.to_json() == run.methods[name].summary and record.status == "ok"
        assert [w.name for w in record.window_list] == [w["name"] for w in data["windows"]]
        assert {t: [c.file for c in f.cells] for t, f in record.task_figures.items()} == {
            t: [c["file"] for c in f["bench"]] for t, f in data["tasks"].items()
        }


def test_the_run_tells_its_progress_as_events(sweep_run):
    """What the live display (make demo on a terminal) is driven by: every method in order with its place, and
    each window's answers counted up to the number it sent (bench's from its own progress bar)."""
    rec = sweep_run["events"]
    n = len(DEMO_METHODS)
    assert [(e["method"], e["index"], e["total"]) for e in rec.named("method.start")] == [
        (m, i + 1, n) for i, m in enumerate(DEMO_METHODS)
    ]
    assert [(e["method"], e["status"]) for e in rec.named("method.end")] == [(m, "ok") for m in DEMO_METHODS]
    assert [e["method"] for e in rec.named("server.ready")] == list(DEMO_METHODS)
    windows, current, last = [], None, None
    for event, f in rec.events:
        if event == "window.start":
            current, last = f, None
        elif event == "window.progress":
            last = f["done"]
        elif event == "window.end":
            windows.append((current["name"], current["total"], last))
    assert len(windows) == n * (3 + 2 * len(WORKLOAD["concurrencies"]))
    for name, total, last in windows:
        expected = WORKLOAD["num_prompts"] if name.startswith("bench/") else total
        assert total == expected and last == expected, (name, total, last)


@pytest.mark.parametrize("name", SPEC_METHODS)
def test_spec_methods_reconcile_every_identity(sweep_run, name):
    s = sweep_run["summaries"][name]
    k = s["speculative_config"]["num_speculative_tokens"]
    argv = s["server"]["argv"]
    level = argv[argv.index("--per-request-spec-decode-metrics") + 1]
    for w in s["windows"]:
        names = [c["name"] for c in w["checks"]]
        if w["phase"] == "bench":
            assert "bench spec_decode_num_drafts = Δ num_drafts" in names, w["name"]
            assert f"bench completed × {WORKLOAD['perf_output_len']} = Δ vllm:generation_tokens" in names, w["name"]
        elif level == "summary":  # 4 totals + one per draft position
            assert len(names) == 4 + k, (w["name"], names)
        else:  # detailed: the per-step arrays add 2 totals and one more per draft position
            assert level == "detailed" and len(names) == 6 + 2 * k, (w["name"], names)
            assert "Σ len(per_step_drafted) = Δ num_drafts" in names, (w["name"], names)
        assert all(c["ok"] for c in w["checks"])
    for task, figures in s["tasks"].items():
        assert figures["num_draft_tokens"] > 0, (name, task)
        assert 0 < figures["acceptance_rate"] <= 1
        assert 1 < figures["mean_acceptance_length"] <= k + 1
        assert len(figures["histogram"]) == k + 1
        assert figures["acceptance_rate"] == figures["num_accepted_draft_tokens"] / figures["num_draft_tokens"]


@pytest.mark.parametrize("name", PLAIN_METHODS)
def test_plain_decode_reports_na_not_zero(sweep_run, name):
    s = sweep_run["summaries"][name]
    for figures in s["tasks"].values():
        assert figures["acceptance_rate"] is None and figures["mean_acceptance_length"] is None
        assert figures["histogram"] is None
    for w in s["windows"]:
        assert w["from_counters"] is None
        # no acceptance identities to check; a bench window still checks that every answer came back whole
        n = WORKLOAD["perf_output_len"]
        expected = (
            []
            if w["phase"] != "bench"
            else [
                "bench completed = Δ vllm:request_success",
                f"bench total_output_tokens = completed × {n}",
                f"bench completed × {n} = Δ vllm:generation_tokens",
                # --slo (conftest.SLO): the goodput computed here against bench's own
                "per-request results = bench completed",
                "goodput from per-request results = bench request_goodput",
            ]
        )
        assert [c["name"] for c in w["checks"]] == expected, w["name"]
        assert all(c["ok"] for c in w["checks"])
    console = Console(record=True, width=200)
    console.print(console_table.task_table({name: s}, "code"))
    row = next(line for line in console.export_text().splitlines() if line.strip("│ ").startswith(name))
    assert row.split("│")[3].strip() == "n/a"  # the acceptance-rate cell


@pytest.mark.parametrize("name", SPEC_METHODS)
def test_greedy_outputs_equal_the_baseline(sweep_run, name):
    base = methods.baseline_of(name)
    for task in ("code", "chat"):
        mine = read_jsonl(sweep_run["run_dir"] / name / "acceptance" / f"{task}.jsonl")
        theirs = read_jsonl(sweep_run["run_dir"] / base / "acceptance" / f"{task}.jsonl")
        assert [r["id"] for r in mine] == [r["id"] for r in theirs]
        for a, b in zip(mine, theirs):
            ta = a["response"]["choices"][0]["message"]["content"]
            tb = b["response"]["choices"][0]["message"]["content"]
            assert ta == tb, f"{name} vs {base}, {a['id']}: outputs differ"
            assert ta.strip(), "empty output would make equality vacuous"


def test_engine_facts_and_provenance(sweep_run):
    for name, s in sweep_run["summaries"].items():
        server = s["server"]
        assert server["async_scheduling"] is False, name  # explicit and identical for every method
        assert server["model_runner"] in ("V1", "V2")
        # how each fact is known: V1 pinned is inferred (vLLM logs nothing for it), async off asked or observed
        assert server["evidence"]["model_runner"]["basis"] in ("observed", "inferred"), name
        assert server["evidence"]["async_scheduling"]["basis"] in ("asked", "observed"), name
        assert server["evidence"]["kv_cache_tokens"]["basis"] == "observed", name
        assert server["kv_cache_tokens"] > 0
        assert server["vllm_version"] == "0.32.0"
        assert s["provenance"]["help_all"]["sha256"] and s["provenance"]["help_all"]["lines"] > 500
        log = (sweep_run["run_dir"] / name / "server.log").read_text()
        assert "spec-demo" in log
        if name in ("ngram", "suffix"):
            assert "--no-async-scheduling" in server["argv"]
        # what the server itself revealed agrees with the plan it was started from, for every method: the spec
        # families exist exactly with a speculative config, and the per-position counter has K positions
        seen, spec = server["observed"], s["speculative_config"]
        assert seen["metrics"]["read"] and seen["metrics"]["spec_decode_counters"] is (spec is not None), name
        assert seen["models"]["root"] == server["root_model"] == server["target"], name
        if spec is not None:
            k = spec["num_speculative_tokens"]
            assert seen["metrics"]["num_speculative_tokens"] == k, name
            assert seen["responses"]["num_speculative_tokens"] == [k], name
            assert seen["responses"]["drafts_per_step_within_k"] is not False, name  # None: no step drafted
        else:
            assert seen["metrics"]["num_speculative_tokens"] is None and seen["responses"]["with_spec_metrics"] == 0


def test_bench_cells(sweep_run):
    for name, s in sweep_run["summaries"].items():
        for _task, figures in s["tasks"].items():
            cells = figures["bench"]
            assert [c["concurrency"] for c in cells] == list(WORKLOAD["concurrencies"])
            for c in cells:
                assert c["completed"] == WORKLOAD["num_prompts"] and c["failed"] == 0
                assert c["total_output_tokens"] == WORKLOAD["num_prompts"] * WORKLOAD["perf_output_len"]
                assert c["output_throughput"] > 0 and c["p99_tpot_ms"] >= c["p50_tpot_ms"] > 0
                raw = json.loads((sweep_run["run_dir"] / name / c["file"]).read_text())
                assert raw["output_throughput"] == c["output_throughput"]  # raw JSON kept as bench wrote it
                assert (name in SPEC_METHODS) == ("spec_decode_draft_tokens" in raw)
                # --save-detailed: every request kept, and the summary's per-request figures come from it
                n = WORKLOAD["num_prompts"]
                assert len(raw["ttfts"]) == len(raw["itls"]) == len(raw["start_times"]) == len(raw["latencies"]) == n
                assert c["per_request"]["requests"] == n
                assert c["per_request"]["chunks"] == sum(len(x) for x in raw["itls"])
                assert c["per_request"]["max_send_pause_ms"] >= 0 and "spec_decode_acceptance_rate" not in c


def test_the_run_sealed_itself(sweep_run):
    """The sweep's last step: tables.txt and SHA256SUMS over every file it produced (later tests may add files,
    so only the listed summaries are checked here)."""
    import hashlib

    run_dir = sweep_run["run_dir"]
    listed = dict(reversed(line.split("  ", 1)) for line in (run_dir / "SHA256SUMS").read_text().splitlines())
    first, second = (run_dir / "tables.txt").read_text().splitlines()[:2]
    assert "tables.txt" in listed and first.startswith("model set tiny: random weights") and second.startswith("task: ")
    for name in sweep_run["summaries"]:
        rel = f"{name}/summary.json"
        assert listed[rel] == hashlib.sha256((run_dir / rel).read_bytes()).hexdigest(), rel


def test_manifest_hashes_every_input(sweep_run):
    run_dir = sweep_run["run_dir"]
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert {m: v["status"] for m, v in manifest["methods"].items()} == {m: "ok" for m in DEMO_METHODS}
    assert len(manifest["inputs"]) == 4
    for rel, digest in manifest["inputs"].items():
        assert workloads.sha256(run_dir / rel) == digest


def _series_value_at(samples, t, *, before: bool) -> float:
    if before:
        return [v for ts, v in samples if ts <= t][-1]
    return next(v for ts, v in samples if ts >= t)


@pytest.mark.parametrize("name", DEMO_METHODS)
def test_prometheus_view_of_each_window_equals_the_collector_diff(sweep_run, prometheus, name):
    s = sweep_run["summaries"][name]
    labels = f'method="{name}",run_id="it-sweep"'
    families = ["vllm:generation_tokens_total"] + (
        [
            "vllm:spec_decode_num_drafts_total",
            "vllm:spec_decode_num_draft_tokens_total",
            "vllm:spec_decode_num_accepted_tokens_total",
        ]
        if name in SPEC_METHODS
        else []
    )
    measured = [w for w in s["windows"] if w["phase"] != "warmup"]
    first, last = measured[0]["start"] - 5, measured[-1]["settled_at"] + 5
    for family in families:
        samples = prometheus.samples(f"{family}{{{labels}}}", first, last)
        assert samples, f"Prometheus stored no {family} series with {labels}"
        for w in measured:
            prom_delta = _series_value_at(samples, w["start"], before=True) - _series_value_at(
                samples, w["settled_at"], before=False
            )
            key = family.removesuffix("_total")
            assert -prom_delta == w["counters"]["counters"][key], (w["name"], family)


def test_run_windows_reach_prometheus(sweep_run, prometheus):
    """Every window of the run reaches Prometheus as its own series, and every stored sample says what the window
    was doing at that moment: 1 while it was open, 0 after it closed. (A window shorter than a scrape interval,
    such as ngram's acceptance windows on a fast machine, may have no sample while open: the start and end
    gauges keep its exact times for the dashboards' windows table.)"""
    s = sweep_run["summaries"]["ngram"]
    end = s["windows"][-1]["settled_at"] + 5
    edge = 0.25  # the active flag turns on just after the start is taken and off just after the end
    # A sample is stamped when its scrape began, but the exporter answers later (on a loaded host by more than
    # the edge): a sample says "open" only if the window was open for the whole of its scrape.
    took = dict(prometheus.samples('scrape_duration_seconds{job="specstack"}', s["windows"][0]["start"] - 30, end))
    seen = set()
    for w in (w for w in s["windows"] if w["phase"] != "warmup"):
        labels = (
            f'method="ngram",run_id="it-sweep",phase="{w["phase"]}",task="{w["task"]}",'
            f'concurrency="{w["concurrency"] or ""}"'
        )
        samples = prometheus.samples(f"specstack_window_active{{{labels}}}", w["start"] - 30, end)
        assert samples, f"no specstack_window_active series for {w['name']}"
        for t, v in samples:
            if w["start"] + edge < t and t + took[t] < w["end"] - edge:
                assert v == 1, (w["name"], t, v)
            elif t > w["end"] + edge:
                assert v == 0, (w["name"], t, v)
        seen.add((w["phase"], w["task"]))
    assert {("acceptance", "code"), ("acceptance", "chat"), ("bench", "code"), ("bench", "chat")} <= seen
    # ... and the exact times, whatever the window's length (stored by the scrape in the quiet gap after it): the
    # exporter is given the instants the summary records, so a loaded host adds no difference.
    sel = '{method="ngram",run_id="it-sweep"}'

    def by_window(query: str) -> dict:
        return {
            (r["metric"]["phase"], r["metric"].get("task", ""), r["metric"].get("concurrency", "")): float(
                r["value"][1]
            )
            for r in prometheus.query(query, end)
        }

    starts = by_window(f"last_over_time(specstack_window_start_timestamp_seconds{sel}[10m])")
    ends = by_window(f"last_over_time(specstack_window_end_timestamp_seconds{sel}[10m])")
    assert len(starts) == len(ends) == len(s["windows"])
    for w in s["windows"]:
        key = (w["phase"], w["task"] or "", str(w["concurrency"] or ""))
        assert abs(starts[key] - w["start"]) < 1e-6 and abs(ends[key] - w["end"]) < 1e-6, (key, w)


def test_hf_token_never_reaches_the_bundle(sweep_run):
    files = [p for p in sweep_run["run_dir"].rglob("*") if p.is_file()]
    assert len(files) > 100
    leaked = [str(p) for p in files if HF_TOKEN_SENTINEL.encode() in p.read_bytes()]
    assert leaked == []


def test_a_draft_with_the_targets_own_weights_gets_every_draft_accepted(self_draft_run):
    s = self_draft_run
    assert s["status"] == "ok" and s["crosscheck"]["ok"], s["error"]
    assert s["spec_override"]["model"].endswith("tiny-qwen3")
    k = s["speculative_config"]["num_speculative_tokens"]
    for task, figures in s["tasks"].items():
        assert figures["num_draft_tokens"] > 0
        assert figures["acceptance_rate"] == 1.0, task
        assert figures["mean_acceptance_length"] == k + 1
        assert figures["histogram"][:-1] == [0] * k  # every verify step accepted all K drafts
