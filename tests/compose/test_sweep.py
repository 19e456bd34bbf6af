"""`make sweep PLATFORM=cpu MODEL_SET=tiny` over baseline, ngram, suffix and suffix-default: strictly one server
at a time (read from the engine's own start/die events), one RUN_ID, the report at the end."""

from __future__ import annotations

import json

import pytest

from specstack.config import methods

from . import engine
from .conftest import tail
from .stack import HF_CANARY

pytestmark = pytest.mark.compose

METHODS = ["baseline", "ngram", "suffix", "suffix-default"]


def test_sweep_runs_every_method_ok_under_one_run_id(sweep_run):
    out = sweep_run["make"]
    assert out.returncode == 0, tail(out.stdout)
    run_dir = sweep_run["run_dir"]
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["run_id"] == "cpu-sweep" and sorted(manifest["methods"]) == sorted(METHODS)
    for m in METHODS:
        s = json.loads((run_dir / m / "summary.json").read_text())
        assert s["status"] == "ok" and s["crosscheck"]["ok"] and s["run_id"] == "cpu-sweep", (m, s["error"])
        host = s["provenance"]["host"]
        assert host["method"] == m and host["run_id"] == "cpu-sweep"
    suffix = json.loads((run_dir / "suffix" / "summary.json").read_text())
    assert suffix["tasks"]["code"]["num_draft_tokens"] > 0  # arctic-inference works in the CPU image


def test_a_restarted_container_saves_only_this_starts_log(sweep_run, rerun):
    """vllm-baseline ran before (make run, RUN_ID cpu-rerun): compose starts that stopped container again,
    old log and all. The saved log holds this start's lines only, so its runner is this start's."""

    def servers(run: dict) -> set[str]:
        return {
            cid
            for cid, c in run["events"].started.items()
            if engine.service_of(c) == "vllm-baseline" and not engine.is_oneoff(c)
        }

    assert servers(sweep_run) and servers(sweep_run) <= servers(rerun)  # the same container, started again
    for m in METHODS:
        log = (sweep_run["run_dir"] / "host-provenance" / f"{m}.server.log").read_text()
        assert sum(line.startswith("vllm serve ") for line in log.splitlines()) == 1, m
        s = json.loads((sweep_run["run_dir"] / m / "summary.json").read_text())
        assert s["server"]["model_runner"] == "V1", m


def test_sweep_runs_one_server_at_a_time(sweep_run):
    spans = engine.intervals(sweep_run["events"], "vllm-")
    # Each method: the model fetch and the pre-flight (`compose run`s of the service), then the server.
    assert [s for s, _, _ in spans] == [f"vllm-{m}" for m in METHODS for _ in range(3)], spans
    assert all(die is not None for _, _, die in spans), spans
    for (a, _a_start, a_die), (b, b_start, _) in zip(spans, spans[1:]):
        assert a_die < b_start, f"{b} started before {a} stopped"
    # in the order the engine started them (its event clock, which a container gone by its start still has)
    events = sweep_run["events"]
    vllm = [
        events.started[cid]
        for cid in sorted(events.started, key=events.start_ns.__getitem__)
        if (engine.service_of(events.started[cid]) or "").startswith("vllm-")
    ]
    servers = [c for c in vllm if not engine.is_oneoff(c)]
    assert [engine.service_of(c) for c in servers] == [f"vllm-{m}" for m in METHODS]
    kinds = ["fetch" if engine.is_fetch(c) else "preflight" if engine.is_preflight(c) else "server" for c in vllm]
    assert kinds == ["fetch", "preflight", "server"] * len(METHODS)


def test_suffix_with_vllms_default_cache_is_served_for_real_and_its_run_is_whole(sweep_run):
    """suffix-default (vLLM's default suffix_decoding_max_cached_requests, the cross-request tree) on the real
    engine: its serve arguments reached vLLM (its own log of the parsed arguments), and its run is complete."""
    run_dir = sweep_run["run_dir"]
    plan = methods.build("suffix-default", model_set_name="tiny", platform="cpu-container", models_dir="/models")
    assert plan.speculative_config["suffix_decoding_max_cached_requests"] == 10000
    log = (run_dir / "host-provenance" / "suffix-default.server.log").read_text()
    assert [line for line in log.splitlines() if line.startswith("vllm serve ")] == [
        "vllm serve " + " ".join(plan.argv)
    ]
    (parsed,) = [line for line in log.splitlines() if "non-default args:" in line]
    assert "'suffix_decoding_max_cached_requests': 10000" in parsed and "'method': 'suffix'" in parsed
    s = json.loads((run_dir / "suffix-default" / "summary.json").read_text())
    assert s["status"] == "ok" and s["error"] is None and s["crosscheck"]["ok"], s["error"]
    # the collector attaches by url: the plan is what it asked for, K what the server showed
    assert s["label"] == plan.label and s["asked_for"]["speculative_config"] == plan.speculative_config
    assert s["speculative_config"] == {"num_speculative_tokens": 16} and not s["server_contradictions"]
    assert {w["phase"] for w in s["windows"]} == {"warmup", "acceptance", "bench"}
    assert all(w["status"] == "ok" for w in s["windows"])
    assert s["tasks"]["code"]["num_draft_tokens"] > 0
    assert s["server"]["model_runner"] == s["server"]["model_runner_pinned"] == "V1"
    # the seed's suffix ran beside it with its own cache setting
    seed = json.loads((run_dir / "suffix" / "summary.json").read_text())
    assert seed["asked_for"]["speculative_config"]["suffix_decoding_max_cached_requests"] == 0


def test_sweep_writes_the_report_at_the_end(sweep_run):
    spans = engine.intervals(sweep_run["events"], "vllm-")
    last_server_died = max(die for _, _, die in spans)
    collectors = [c for c in sweep_run["events"].started.values() if engine.service_of(c) == "collector"]
    reports = [
        e
        for e in sweep_run["events"].of("start", "collector")
        if sweep_run["events"].started[e["id"]]["Args"][:1] == ["report"]
    ]
    assert len(reports) == 1 and reports[0]["timeNano"] > last_server_died
    assert len(collectors) == len(METHODS) + 1
    report = (sweep_run["run_dir"] / "report.md").read_text()
    assert all(m in report for m in METHODS)


def test_sweep_results_belong_to_the_user_and_hold_no_token(sweep_run, stack):
    for path in stack.results.rglob("*"):
        st = path.lstat()
        assert (st.st_uid, st.st_gid) == (stack.user.pw_uid, stack.user.pw_gid), path
        if path.is_file():
            assert HF_CANARY.encode() not in path.read_bytes(), path
