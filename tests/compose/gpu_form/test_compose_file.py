"""compose.yaml itself: valid against the compose-spec schema, profiles <-> methods, pinned images, the serve
command = the native plan, network/secret/socket defaults, Prometheus (promtool and a real Prometheus reading the
shipped config)."""

from __future__ import annotations

import re
import shutil
import subprocess
import time
import tomllib
from http.server import BaseHTTPRequestHandler

import pytest
import requests
import yaml

from specstack.config import methods
from specstack.host.image_lock import read_lock
from specstack.host.image_ref import pin_problem
from specstack.host.targets import write_targets

from ...support import HttpStandIn, Prometheus
from .render import (
    COMPOSE,
    LOCK,
    METHODS,
    NON_METHOD_PROFILES,
    PROM_CONFIG,
    REPO,
    check_jsonschema,
    container_plan,
    interpolate,
    lock_env,
    vllm_services,
)

pytestmark = pytest.mark.compose


# --- schema -------------------------------------------------------------------------------------------


def test_compose_file_is_valid_against_the_compose_spec_schema():
    out = subprocess.run(
        [check_jsonschema(), "--builtin-schema", "vendor.compose-spec", str(COMPOSE)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_interpolated_compose_file_is_valid_too(resolved, tmp_path):
    """After `--env-file images.lock` interpolation every value still fits the schema (ports, sizes...)."""
    path = tmp_path / "compose.resolved.yaml"
    path.write_text(yaml.safe_dump(resolved))
    out = subprocess.run(
        [check_jsonschema(), "--builtin-schema", "vendor.compose-spec", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_the_schema_check_really_rejects_a_broken_file(tmp_path):
    bad = tmp_path / "compose.yaml"
    bad.write_text("services:\n  x:\n    image: a:1.0.0\n    ports: 8000\n    no_such_key: 1\n")
    out = subprocess.run(
        [check_jsonschema(), "--builtin-schema", "vendor.compose-spec", str(bad)],
        capture_output=True,
        text=True,
        timeout=120,
    )
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
    table = methods.build("ngram", platform="gpu-container").flags
    for flag in table:
        assert f"--{flag}" not in text, f"compose.yaml copies --{flag}; it belongs in services/methods.toml"


# --- the serve command is the native plan --------------------------------------------------------------


@pytest.mark.parametrize("method", METHODS)
def test_container_command_runs_the_same_plan_as_the_native_runtime(resolved, method):
    svc = resolved["services"][f"vllm-{method}"]
    plan = container_plan(svc, {})
    assert plan == methods.build(method, platform="gpu-container").to_json()
    assert plan["flags"]["host"] == "0.0.0.0" and plan["flags"]["port"] == 8000


def test_model_set_and_k_override_reach_thecontainer_plan(raw):
    env = {**lock_env(), "SPECSTACK_MODEL_SET": "tiny", "SPECSTACK_SPEC_OVERRIDE": '{"num_speculative_tokens": 2}'}
    svc = interpolate(raw, env)["services"]["vllm-eagle3"]
    plan = container_plan(svc, {})
    assert (
        plan
        == methods.build(
            "eagle3", model_set_name="tiny", platform="gpu-container", spec_override={"num_speculative_tokens": 2}
        ).to_json()
    )
    assert plan["speculative_config"]["num_speculative_tokens"] == 2


def test_health_port_matches_the_plan_port(resolved):
    svc = resolved["services"]["vllm-baseline"]
    port = methods.build("baseline", platform="gpu-container").flags["port"]
    assert f"127.0.0.1:{port}/health" in " ".join(svc["healthcheck"]["test"])
    assert any(p.endswith(f":{port}") for p in svc["ports"])


# --- images -------------------------------------------------------------------------------------------


def test_lock_file_format():
    images = read_lock(LOCK)
    assert set(images) == {"VLLM_IMAGE", "PROMETHEUS_IMAGE", "GRAFANA_IMAGE"}
    assert images["VLLM_IMAGE"].split("@")[0] == "vllm/vllm-openai:v0.32.0"
    for ref in images.values():
        assert pin_problem(ref) is None, ref


@pytest.mark.parametrize(
    "ref,ok",
    [
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
    ],
)
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
        for key, _value in (svc.get("environment") or {}).items():
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
        # an init as PID 1 passes SIGTERM on (Python as PID 1 ignores it until vLLM installs its handler)
        assert svc["init"] is True and svc["stop_grace_period"] == "60s", name
        mounts = {v.split(":")[1]: v.split(":")[0] for v in svc["volumes"]}
        assert mounts[svc["environment"]["HF_HOME"]] == "hf-cache"
        assert mounts[svc["environment"]["VLLM_CACHE_ROOT"]] == "vllm-cache"
        # every cache a start fills lives on that volume, so a new container reuses it (FlashInfer's JIT kernels:
        # 76 s of a first start on the H200)
        for cache in ("TRITON_CACHE_DIR", "FLASHINFER_WORKSPACE_BASE"):
            assert svc["environment"][cache].startswith(svc["environment"]["VLLM_CACHE_ROOT"]), (name, cache)
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
    out = subprocess.run([promtool(), "check", "config", str(PROM_CONFIG)], capture_output=True, text=True, timeout=60)
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
        body = (
            b"# TYPE vllm:spec_decode_num_drafts counter\n"
            b'vllm:spec_decode_num_drafts_total{engine="0",model_name="spec-demo"} 7.0\n'
        )
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.end_headers()
        self.wfile.write(body)


def test_real_prometheus_labels_series_from_the_target_file(tmp_path):
    """The shipped prometheus.yml, run by a real Prometheus: a target written with `specstack.host targets`
    is scraped and every series carries the method and run_id labels."""
    server = HttpStandIn(_FakeVllm)
    work = tmp_path / "prom"
    (work / "targets").mkdir(parents=True)
    write_targets(
        work / "targets" / "vllm.json", server.url.removeprefix("http://"), {"method": "ngram", "run_id": "r-compose"}
    )
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
        server.close()
