"""`make run METHOD=ngram PLATFORM=cpu MODEL_SET=tiny` through containers only, with the images pinned by
`make lock` against a real registry on loopback; then what the engine says about the running stack."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specstack.config import methods

from . import engine
from .conftest import ABSENT_GRAFANA, CPU_KEYS, LOCKED_RUN_WAIT, compose_config, cpuset, tail
from .stack import HF_CANARY

pytestmark = pytest.mark.compose


def summary(run_dir: Path, method: str) -> dict:
    return json.loads((run_dir / method / "summary.json").read_text())


def server(run: dict, service: str) -> dict:
    """The service's server container (not the fetch or pre-flight `compose run` of the same service)."""
    (found,) = [c for c in all_containers(run).values() if engine.service_of(c) == service and not engine.is_oneoff(c)]
    return found


def all_containers(run: dict) -> dict[str, dict]:
    """Every container of the run, by id: those still there afterwards and those seen when they started."""
    return {**run["events"].started, **{c["Id"]: c for c in run.get("containers", [])}}


# --- make lock against the registry ----------------------------------------------------------------


def test_make_lock_writes_the_engine_repo_digest(locked):
    assert locked["make"].returncode == 0, tail(locked["make"].stdout)
    for key in CPU_KEYS:
        pushed = locked["pushed"][key]
        (image,) = engine.inspect(pushed, kind="image")
        repo = pushed.rsplit(":", 1)[0]
        (digest,) = [d.split("@", 1)[1] for d in image["RepoDigests"] if d.startswith(repo + "@")]
        assert locked["refs"][key] == f"{pushed}@{digest}", key
    # The optional Grafana line is left as it was (no image of it on the engine), and the file still passes.
    assert locked["refs"]["GRAFANA_IMAGE"] == ABSENT_GRAFANA
    assert "not pinned" not in locked["make"].stdout


def test_run_started_exactly_the_locked_images(locked_run, locked):
    by_service: dict[str, set[tuple[str, str]]] = {}
    for c in all_containers(locked_run).values():
        by_service.setdefault(engine.service_of(c), set()).add((c["Config"]["Image"], c["Image"]))
    want = {"vllm-ngram": "VLLM_IMAGE", "collector": "COLLECTOR_IMAGE", "prometheus": "PROMETHEUS_IMAGE"}
    for service, key in want.items():
        ref = locked["refs"][key]
        (image,) = engine.inspect(ref, kind="image")
        assert by_service[service] == {(ref, image["Id"])}, (service, by_service.get(service))


# --- the bundle ------------------------------------------------------------------------------------


def test_run_ends_with_an_ok_bundle_and_exact_crosschecks(locked_run):
    out = locked_run["make"]
    assert out.returncode == 0, tail(out.stdout)
    s = summary(locked_run["run_dir"], "ngram")
    assert s["status"] == "ok" and s["error"] is None
    assert s["crosscheck"]["ok"] and s["crosscheck"]["mismatches"] == []
    checks = [c for w in s["windows"] for c in w["checks"]]
    assert len(checks) == s["crosscheck"]["checks"] > 10 and all(c["ok"] for c in checks)
    assert {w["phase"] for w in s["windows"]} == {"warmup", "acceptance", "bench"}
    assert all(w["status"] == "ok" for w in s["windows"])
    assert s["server"]["runtime"] == "url" and s["server"]["url"] == "http://vllm-ngram:8000"
    assert s["server"]["vllm_version"].startswith("0.32.0") and s["asked_for"]["platform"] == "cpu-container"
    # attached (url runtime): the container's K as /metrics shows it agrees with the plan, which stays "asked for"
    assert s["server"]["argv"] is None and s["server_contradictions"] is None
    assert (
        s["speculative_config"]["num_speculative_tokens"]
        == s["asked_for"]["speculative_config"]["num_speculative_tokens"]
        == s["server"]["observed"]["metrics"]["num_speculative_tokens"]
    )
    assert s["tasks"]["code"]["num_draft_tokens"] > 0 and s["tasks"]["code"]["acceptance_rate"] is not None


def test_the_collector_ends_with_the_table_not_teardown_noise(locked_run):
    """The collector prints the run's table (stderr) before its JSON line, and nothing from interpreter teardown
    (vLLM's triton bindings print "nanobind: leaked" lines there; cli/main.entry skips it)."""
    text = locked_run["make"].stdout  # stderr merged in
    assert "nanobind" not in text
    table, result = text.find("task: code (acceptance answers ended by:"), text.find('{"status": "ok"')
    assert -1 < table < result, tail(text)
    assert "✔" in text[table:result]  # the cross-check column of the ngram row


def test_runner_is_read_from_the_saved_container_log(locked_run):
    """The host saves the server container's log of this start into the run (before it stops); the
    collector reads the model runner from it and checks it against the pin of methods.toml."""
    run_dir = locked_run["run_dir"]
    log = (run_dir / "host-provenance" / "ngram.server.log").read_text()
    assert [line for line in log.splitlines() if line.startswith("vllm serve ")] == [
        "vllm serve "
        + " ".join(methods.build("ngram", model_set_name="tiny", platform="cpu-container", models_dir="/models").argv)
    ]
    assert "KV cache size" in log and "Using V2 Model Runner" not in log
    # The bench's requests and the stop: the log was saved when the collector had finished, before the stop.
    assert "POST /v1/completions" in log and "Shutting down" not in log
    s = summary(run_dir, "ngram")
    assert s["server"]["model_runner"] == s["server"]["model_runner_pinned"] == "V1"
    assert s["server"]["kv_cache_tokens"] > 0
    assert "KV cache size" in (run_dir / "ngram" / "server.log").read_text()


def test_prometheus_container_view_carries_method_and_run_id(locked_run):
    s = summary(locked_run["run_dir"], "ngram")
    view = s["prometheus_view"]
    assert view["url"] == "http://prometheus:9090"
    task = view["tasks"]["code"]
    assert task["status"] == "ok", task
    assert task["per_position"] and all(0.0 <= v <= 1.0 for v in task["per_position"])
    assert (locked_run["run_dir"] / "ngram" / "plots" / task["png"]).stat().st_size > 1000
    drafts = locked_run["prom"]["drafts"]
    assert drafts, "the Prometheus container has no spec-decode series of this run"
    for series in drafts:
        labels = series["metric"]
        assert labels["method"] == "ngram" and labels["run_id"] == "cpu-run" and labels["job"] == "vllm"
        assert float(series["value"][1]) > 0
    assert len(locked_run["prom"]["all"]) > 20
    assert locked_run["prom"]["unlabelled"] == []


def test_report_is_written(locked_run):
    run_dir = locked_run["run_dir"]
    assert "ngram" in (run_dir / "report.md").read_text()
    assert (run_dir / "report.html").stat().st_size > 10_000
    assert "report_md" in locked_run["make"].stdout


def test_the_run_seals_everything_it_produced(locked_run):
    """make writes host provenance and server logs after each collector sealed the run; the report, the run's last
    step, seals again, so the finished folder proves itself (specstack verify)."""
    sealed = locked_run["sealed"]
    assert sealed is not None, "no SHA256SUMS in the run folder"
    assert sealed.ok, (sealed.changed, sealed.missing, sealed.extra)
    assert "host-provenance/ngram.server.log" in (locked_run["run_dir"] / "SHA256SUMS").read_text()


def test_host_provenance_records_the_image_versions(locked_run, locked):
    doc = summary(locked_run["run_dir"], "ngram")["provenance"]["host"]
    assert doc["platform"] == "cpu-container" and doc["gpu"] is None
    assert doc["cpu"]["server_cpuset"] == cpuset() and doc["cpu"]["cores"] >= 1
    server = next(c for c in doc["containers"] if c["service"] == "vllm-ngram")
    labels = server["image_labels"]
    assert labels["org.specstack.vllm"] == "0.32.0" and labels["org.specstack.torch"].endswith("+cpu")
    assert labels["org.specstack.arctic-inference"] == "0.3.0"
    assert server["pinned_by"] == "repo_digest"
    assert locked["refs"]["VLLM_IMAGE"].split("@")[1] in " ".join(server["repo_digests"])
    prom = next(c for c in doc["containers"] if c["service"] == "prometheus")
    assert prom["image_labels"]["org.specstack.prometheus-deb"].startswith("2.42.0")
    assert doc["server"]["runtime"]["vllm"].startswith("0.32.0")
    assert doc["server"]["plan"]["target"] == "/models/tiny-qwen3"


def test_the_server_runs_the_cpu_container_plan(locked_run, stack):
    cid = server(locked_run, "vllm-ngram")["Id"]
    proc = locked_run["events"].process[cid]
    plan = methods.build("ngram", model_set_name="tiny", platform="cpu-container", models_dir="/models")
    assert proc["argv"][-len(plan.argv) - 1 :] == ["serve", *plan.argv], proc["argv"]
    assert "--enforce-eager" in proc["argv"]
    assert {k: proc["env"].get(k) for k in plan.env} == plan.env  # VLLM_USE_V2_MODEL_RUNNER=0 too
    host = server(locked_run, "vllm-ngram")["HostConfig"]
    assert host["CpusetCpus"] == cpuset() and host["ShmSize"] == 2 * 1024**3
    assert not host.get("DeviceRequests")


def test_the_health_window_is_wait_timeout(locked_run, rerun):
    """WAIT_TIMEOUT reaches the created server container as its healthcheck start_period (the engine's own
    record), so it is never marked unhealthy before `up --wait` gives up; the message says that number."""
    ngram = server(locked_run, "vllm-ngram")["Config"]["Healthcheck"]
    assert ngram["StartPeriod"] == LOCKED_RUN_WAIT * 10**9 and ngram["Interval"] == 3 * 10**9
    assert f"waiting up to {LOCKED_RUN_WAIT} s" in locked_run["make"].stdout
    baseline = server(rerun, "vllm-baseline")["Config"]["Healthcheck"]
    assert baseline["StartPeriod"] == 600 * 10**9  # make's CPU default
    assert "waiting up to 600 s" in rerun["make"].stdout


def test_the_fetch_step_says_local_models_need_no_download(locked_run):
    out = locked_run["make"].stdout
    assert "--- ngram: models into the cache" in out
    assert "fetch: target /models/tiny-qwen3 is a local folder: nothing to download" in out
    assert "fetch: ngram (tiny) reads local folders only: no download, the network is not used" in out
    # before the pre-flight and the server
    assert out.index("reads local folders only") < out.index("--- ngram: pre-flight") < out.index("starting vllm-ngram")
    fetches = [c for c in all_containers(locked_run).values() if engine.is_fetch(c)]
    assert len(fetches) == 1 and engine.service_of(fetches[0]) == "vllm-ngram"


def test_without_a_grafana_image_grafana_is_left_out_and_said_once(locked_run):
    """The lock of this run names a Grafana image the engine does not have (as on any machine without a
    registry); with one, Grafana starts as on GPU (test_parallel.py, a stand-in image)."""
    out = locked_run["make"].stdout
    assert out.count(f"Grafana: no image {ABSENT_GRAFANA} on this Docker engine") == 1, tail(out)
    assert "dashboards: http" not in out
    assert "grafana" not in {engine.service_of(c) for c in all_containers(locked_run).values()}


# --- security, read from the engine ---------------------------------------------------------------


def test_no_container_mounts_the_docker_socket(locked_run):
    seen = all_containers(locked_run)
    assert {engine.service_of(c) for c in seen.values()} >= {"prometheus", "vllm-ngram", "collector", "tiny-models"}
    for c in seen.values():
        for m in c["Mounts"]:
            assert "docker.sock" not in m["Source"] and not m["Source"].startswith(("/var/run", "/run/docker")), (
                engine.service_of(c),
                m,
            )
        assert not c["HostConfig"]["Privileged"] and c["HostConfig"]["PidMode"] != "host"
        assert c["HostConfig"]["NetworkMode"] != "host"


def test_published_ports_bind_loopback_only(locked_run):
    published = 0
    for c in all_containers(locked_run).values():
        for port, bindings in (c["HostConfig"].get("PortBindings") or {}).items():
            for b in bindings or []:
                published += 1
                assert b["HostIp"] == "127.0.0.1", (engine.service_of(c), port, b)
    assert published >= 2  # prometheus and the vLLM server


def test_privileges_are_as_compose_says(locked_run, stack, locked):
    config = compose_config(stack, "images.registry.lock")["services"]
    for c in all_containers(locked_run).values():
        svc = config[engine.service_of(c)]
        assert sorted(c["HostConfig"]["SecurityOpt"] or []) == sorted(svc.get("security_opt", [])), svc
        assert "no-new-privileges:true" in c["HostConfig"]["SecurityOpt"]
        assert sorted(c["HostConfig"]["CapDrop"] or []) == sorted(svc.get("cap_drop", [])), engine.service_of(c)
        assert not c["HostConfig"].get("CapAdd")
    collectors = [c for c in all_containers(locked_run).values() if engine.service_of(c) == "collector"]
    assert collectors and all(c["Config"]["User"] == f"{stack.user.pw_uid}:{stack.user.pw_gid}" for c in collectors)


def test_hf_token_reaches_the_server_as_a_secret_only(locked_run):
    for c in all_containers(locked_run).values():
        env = "\n".join(c["Config"]["Env"] or [])
        assert HF_CANARY not in env, engine.service_of(c)
    cid = server(locked_run, "vllm-ngram")["Id"]
    assert locked_run["events"].secrets[cid] == HF_CANARY
    assert HF_CANARY not in json.dumps(locked_run["events"].process[cid]["env"])


def test_results_belong_to_the_invoking_user_and_hold_no_token(locked_run, stack):
    files = [p for p in locked_run["run_dir"].rglob("*")]
    assert len(files) > 20
    for path in files:
        st = path.lstat()
        assert (st.st_uid, st.st_gid) == (stack.user.pw_uid, stack.user.pw_gid), path
        if path.is_file():
            assert HF_CANARY.encode() not in path.read_bytes(), path
    if stack.user.pw_uid != 0:
        assert all(p.lstat().st_uid != 0 for p in files)
