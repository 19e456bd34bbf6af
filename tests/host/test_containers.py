"""collector/specstack/containers.py: image lock against a real (local) registry API with token auth,
reference parsing, the GPU-free wait, the Prometheus target file, and the snapshot lookup script."""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import threading
import tomllib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from specstack import containers as c

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]


# --- references ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("ref,expected", [
    ("vllm/vllm-openai:v0.32.0", ("docker.io", "vllm/vllm-openai", "v0.32.0", None)),
    ("ubuntu:24.04", ("docker.io", "library/ubuntu", "24.04", None)),
    ("ghcr.io/org/img:1.0.0@sha256:" + "a" * 64, ("ghcr.io", "org/img", "1.0.0", "sha256:" + "a" * 64)),
    ("localhost:5000/team/img:2.0.1", ("localhost:5000", "team/img", "2.0.1", None)),
    ("127.0.0.1:5000/img", ("127.0.0.1:5000", "img", None, None)),
])
def test_parse_reference(ref, expected):
    p = c.parse_reference(ref)
    assert (p["registry"], p["repository"], p["tag"], p["digest"]) == expected


# --- make lock against a registry that wants a bearer token --------------------------------------------

MANIFEST = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
                       "manifests": []}).encode()
DIGEST = "sha256:" + hashlib.sha256(MANIFEST).hexdigest()


class Registry(BaseHTTPRequestHandler):
    """The distribution API's manifest endpoint + an anonymous token service, like Docker Hub's."""
    seen: list[tuple[str, str, str | None]] = []
    send_digest_header = True

    def _manifest(self, head: bool):
        Registry.seen.append((self.command, self.path, self.headers.get("Authorization")))
        if self.headers.get("Authorization") != "Bearer t0ken":
            self.send_response(401)
            port = self.server.server_address[1]
            self.send_header("WWW-Authenticate", f'Bearer realm="http://127.0.0.1:{port}/token",'
                                                 f'service="test-registry",scope="repository:team/app:pull"')
            self.end_headers()
            return
        if self.path != "/v2/team/app/manifests/1.2.3":
            self.send_response(404)
            self.end_headers()
            return
        assert "application/vnd.oci.image.index.v1+json" in self.headers.get("Accept", "")
        self.send_response(200)
        if Registry.send_digest_header:
            self.send_header("Docker-Content-Digest", DIGEST)
        self.send_header("Content-Length", str(len(MANIFEST)))
        self.end_headers()
        if not head:
            self.wfile.write(MANIFEST)

    def do_HEAD(self):  # noqa: N802
        self._manifest(head=True)

    def do_GET(self):  # noqa: N802
        if self.path.startswith("/token"):
            assert "service=test-registry" in self.path and "scope=repository%3Ateam%2Fapp%3Apull" in self.path
            body = json.dumps({"token": "t0ken"}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)
            return
        self._manifest(head=False)

    def log_message(self, *args):
        pass


@pytest.fixture()
def registry():
    Registry.seen = []
    Registry.send_digest_header = True
    server = ThreadingHTTPServer(("127.0.0.1", 0), Registry)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_resolve_digest_follows_the_token_challenge(registry):
    assert c.resolve_digest(f"{registry}/team/app:1.2.3") == DIGEST
    auth = [a for _, _, a in Registry.seen]
    assert auth[0] is None and auth[-1] == "Bearer t0ken"


def test_resolve_digest_hashes_the_manifest_when_the_header_is_missing(registry):
    Registry.send_digest_header = False
    assert c.resolve_digest(f"{registry}/team/app:1.2.3") == DIGEST


def test_resolve_digest_names_a_missing_tag(registry):
    with pytest.raises(c.HostError, match="HTTP 404"):
        c.resolve_digest(f"{registry}/team/app:9.9.9")


def test_lock_rewrites_tags_as_digests_and_keeps_comments(registry, tmp_path):
    lock = tmp_path / "images.lock"
    lock.write_text(f"# comment stays\nAPP_IMAGE={registry}/team/app:1.2.3\n\n")
    c.lock(lock, log=lambda *_: None)
    assert lock.read_text() == f"# comment stays\nAPP_IMAGE={registry}/team/app:1.2.3@{DIGEST}\n\n"
    assert c.pin_problem(c.read_lock(lock)["APP_IMAGE"]) is None
    c.lock(lock, log=lambda *_: None)  # a locked file re-resolves its tag, same result
    assert c.read_lock(lock)["APP_IMAGE"] == f"{registry}/team/app:1.2.3@{DIGEST}"


def test_check_lock_command_rejects_floating_tags(tmp_path):
    lock = tmp_path / "images.lock"
    lock.write_text("VLLM_IMAGE=vllm/vllm-openai:latest\n")
    out = subprocess.run([sys.executable, str(REPO / "collector/specstack/containers.py"), "check-lock",
                          "--file", str(lock)], capture_output=True, text=True)
    assert out.returncode == 1 and "floats" in out.stderr
    out = subprocess.run([sys.executable, str(REPO / "collector/specstack/containers.py"), "check-lock",
                          "--file", str(REPO / "images.lock")], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_read_lock_rejects_malformed_lines(tmp_path):
    lock = tmp_path / "images.lock"
    lock.write_text("vllm=vllm/vllm-openai:v0.32.0\n")
    with pytest.raises(c.HostError, match="NAME_IMAGE=reference"):
        c.read_lock(lock)


# --- GPU wait -----------------------------------------------------------------------------------------

def test_wait_gpu_free_needs_two_low_readings_and_is_bounded():
    readings = iter([30000, 500, 20000, 400, 300])
    now = [0.0]
    used = c.wait_gpu_free("0", max_used_mib=1024, timeout=60, read=lambda: next(readings),
                           sleep=lambda s: now.__setitem__(0, now[0] + s), clock=lambda: now[0],
                           log=lambda *_: None)
    assert used == 300
    now[0] = 0.0
    with pytest.raises(c.HostError, match="still has 30000 MiB"):
        c.wait_gpu_free("0", max_used_mib=1024, timeout=10, read=lambda: 30000,
                        sleep=lambda s: now.__setitem__(0, now[0] + s), clock=lambda: now[0],
                        log=lambda *_: None)


def test_parse_nvidia_smi():
    gpu = c.parse_nvidia_smi("0, GPU-1, NVIDIA L4, 550.54.15, 23034, 1, 00000000:00:03.0\n",
                             "| NVIDIA-SMI 550.54.15  Driver Version: 550.54.15  CUDA Version: 12.4 |")
    assert gpu["driver_version"] == "550.54.15" and gpu["cuda_version_driver"] == "12.4"
    assert gpu["gpus"] == [{"index": "0", "uuid": "GPU-1", "name": "NVIDIA L4", "driver_version": "550.54.15",
                            "memory_total_mib": 23034, "memory_used_mib": 1, "pci_bus_id": "00000000:00:03.0"}]


# --- Prometheus target file ---------------------------------------------------------------------------

def test_targets_file_is_file_sd_json_readable_by_another_user(tmp_path):
    path = tmp_path / "targets" / "vllm.json"
    c.write_targets(path, "vllm-ngram:8000", {"method": "ngram", "run_id": "r1"})
    assert json.loads(path.read_text()) == [{"targets": ["vllm-ngram:8000"],
                                            "labels": {"method": "ngram", "run_id": "r1"}}]
    assert path.stat().st_mode & 0o777 == 0o644
    c.write_targets(path, None, {})
    assert json.loads(path.read_text()) == []


# --- what the server loaded ---------------------------------------------------------------------------

def test_snapshot_script_reports_hub_snapshots_and_local_folders(tmp_path):
    hf = tmp_path / "hf"
    commit = tomllib.loads((REPO / "services" / "methods.toml").read_text())["model_sets"]["default"]["revisions"][
        "target"]  # Qwen3-8B is pinned: the server asks for that commit
    snap = hf / "hub" / "models--Qwen--Qwen3-8B" / "snapshots" / commit
    snap.mkdir(parents=True)
    (snap / "config.json").write_text('{"a": 1}')
    (hf / "hub" / "models--Qwen--Qwen3-8B" / "refs").mkdir()
    (hf / "hub" / "models--Qwen--Qwen3-8B" / "refs" / "main").write_text(commit + "\n")
    env = {"HF_HOME": str(hf), "PATH": "/usr/bin:/bin", "SPECSTACK_MODEL_SET": "default"}
    out = subprocess.run([sys.executable, "-c", c.SNAPSHOT_SCRIPT, str(REPO / "services"), "draft_model"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout.strip().splitlines()[-1])
    target, draft = doc["models"]
    assert target == {"role": "target", "id": "Qwen/Qwen3-8B", "revision_requested": commit, "kind": "hub",
                      "snapshot": commit, "files": ["config.json"],
                      "config_sha256": hashlib.sha256(b'{"a": 1}').hexdigest()}
    assert draft["id"] == "Qwen/Qwen3-0.6B" and draft["snapshot"] is None and "not in the" in draft["error"]
    assert doc["plan"]["method"] == "draft_model" and "--speculative-config" in doc["plan"]["argv"]


def test_container_record_drops_the_environment():
    inspect = {"Id": "x", "Name": "/specstack-vllm-ngram-1", "Image": "sha256:" + "1" * 64,
               "Config": {"Image": "vllm/vllm-openai:v0.32.0", "Env": ["HF_TOKEN=hf_secret"],
                          "Labels": {"com.docker.compose.service": "vllm-ngram"}}, "State": {}}
    rec = c.container_record(inspect, {"RepoDigests": []})
    assert "hf_secret" not in json.dumps(rec)
    assert rec["pinned_by"] == "image_id" and rec["service"] == "vllm-ngram"


def test_docker_cli_missing_is_a_clear_error(tmp_path):
    cli = c.DockerCLI(str(tmp_path / "no-docker-here"))
    with pytest.raises(c.HostError, match="not found"):
        cli.project_containers("specstack")


def test_lock_pins_only_the_named_lines(registry, tmp_path):
    """PLATFORM=cpu pins its own images and leaves the optional Grafana line (no image of it here) alone."""
    lock = tmp_path / "images.lock"
    lock.write_text(f"APP_IMAGE={registry}/team/app:1.2.3\nGRAFANA_IMAGE=grafana/grafana:12.0.2\n")
    c.lock(lock, log=lambda *_: None, keys=["APP_IMAGE"])
    assert c.read_lock(lock) == {"APP_IMAGE": f"{registry}/team/app:1.2.3@{DIGEST}",
                                 "GRAFANA_IMAGE": "grafana/grafana:12.0.2"}
    with pytest.raises(c.HostError, match="no line for NOPE_IMAGE"):
        c.lock(lock, log=lambda *_: None, keys=["NOPE_IMAGE"])
