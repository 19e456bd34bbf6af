"""Host-side helpers of the compose stack (compose.yaml, services/compose.mk): what ran, on which GPU or CPUs.

No container gets the Docker socket: anyone who can write to it is root on the host, and the
collector talks to the network. So the facts only Docker knows are gathered here, on the host, by the
user who already runs `docker compose`, and written to a JSON file the collector reads:

  record          results/<run-id>/host-provenance/<method>.json: image digests and labels (versions) of
                  every running container of the project, nvidia-smi / driver / CUDA versions (GPU) or the
                  CPU model and the server's cpuset (CPU), and the Hugging Face snapshot (commit hash) of
                  each model the method's server loaded.
  save-log        results/<run-id>/host-provenance/<method>.server.log: this start's lines of the method's
                  server container (compose keeps a stopped container's old log when it starts it again).
  check-gpu-host  before anything is pulled: the driver is new enough for the image's CUDA and the GPU's
                  compute capability for the dtype; names the fix (the -cu129 image, a driver upgrade).
  wait-gpu-free   block (bounded) until a GPU's memory is released after a server stopped.
  targets         write / clear the Prometheus file_sd target file (method and run_id labels).
  lock            resolve every image tag of images.lock to its digest (registry API).

Standard library only, so it runs with any python3 (`python3 collector/specstack/containers.py ...`)
as well as `specstack containers ...`. Docker is reached through the docker SDK when it is importable
(the project venv has it), else through the `docker` CLI.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from datetime import datetime, timezone
from pathlib import Path

SCHEMA = "specstack.host_provenance/1"
PROJECT = os.environ.get("COMPOSE_PROJECT_NAME", "specstack")
DIGEST_RE = re.compile(r"^sha256:[0-9a-f]{64}$")
# Environment variables are never copied into a record: they carry HF_TOKEN and friends.
_INSPECT_KEYS_DROPPED = ("Env",)


class HostError(RuntimeError):
    """Something on the host is missing or wrong; the message says what to do."""


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def atomic_write(path: Path, text: str, mode: int = 0o644) -> Path:
    """Write via a temp file + rename; `mode` is applied before the rename (mkstemp makes 0600 files,
    which a reader running as another user, e.g. Prometheus as nobody, could not open)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


# --- Docker access ------------------------------------------------------------------------------------

class DockerCLI:
    """The `docker` command line; `inspect` output is the Engine API's own JSON."""

    def __init__(self, docker: str = "docker"):
        self.docker = docker

    def _run(self, args: list[str], timeout: float = 60) -> str:
        try:
            out = subprocess.run([self.docker, *args], capture_output=True, text=True, timeout=timeout)
        except FileNotFoundError:
            raise HostError(f"`{self.docker}` not found; install the Docker CLI") from None
        except subprocess.TimeoutExpired:
            raise HostError(f"`docker {' '.join(args[:2])}` did not answer in {timeout:.0f} s") from None
        if out.returncode != 0:
            raise HostError(f"`docker {' '.join(args[:2])}` failed: {out.stderr.strip() or out.stdout.strip()}")
        return out.stdout

    def project_containers(self, project: str) -> list[dict]:
        ids = self._run(["ps", "-q", "--no-trunc", "--filter", f"label=com.docker.compose.project={project}"]).split()
        return json.loads(self._run(["inspect", *ids])) if ids else []

    def image(self, ref: str) -> dict:
        return json.loads(self._run(["image", "inspect", ref]))[0]

    def exec(self, container: str, argv: list[str], timeout: float = 120) -> tuple[int, str]:
        try:
            out = subprocess.run([self.docker, "exec", container, *argv], capture_output=True, text=True,
                                 timeout=timeout)
        except subprocess.TimeoutExpired:
            return 124, f"timed out after {timeout:.0f} s"
        return out.returncode, out.stdout if out.returncode == 0 else (out.stderr or out.stdout)

    def service_container(self, project: str, service: str) -> dict | None:
        """The service's own container (running or stopped), never a one-off `compose run` of it."""
        ids = self._run(["ps", "-a", "-q", "--no-trunc", "--filter", f"label=com.docker.compose.project={project}",
                         "--filter", f"label=com.docker.compose.service={service}",
                         "--filter", "label=com.docker.compose.oneoff=False"]).split()
        return json.loads(self._run(["inspect", ids[0]]))[0] if ids else None

    def logs(self, container: str, since: str) -> str:
        """stdout and stderr of the container from `since` (RFC 3339) on, in one stream."""
        try:
            out = subprocess.run([self.docker, "logs", "--since", since, container], stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True, errors="replace", timeout=120)
        except subprocess.TimeoutExpired:
            raise HostError(f"`docker logs {container}` did not answer in 120 s") from None
        if out.returncode != 0:
            raise HostError(f"`docker logs {container}` failed: {out.stdout.strip()[-500:]}")
        return out.stdout

    def version(self) -> dict:
        try:
            return json.loads(self._run(["version", "--format", "{{json .Server}}"]))
        except (HostError, json.JSONDecodeError):
            return {}


class DockerSDK:
    """The docker SDK's low-level API: same JSON as the CLI."""

    def __init__(self):
        import docker  # noqa: PLC0415 (optional dependency)
        self.client = docker.from_env()
        self.api = self.client.api

    def project_containers(self, project: str) -> list[dict]:
        found = self.api.containers(filters={"label": f"com.docker.compose.project={project}"})
        return [self.api.inspect_container(c["Id"]) for c in found]

    def image(self, ref: str) -> dict:
        return self.api.inspect_image(ref)

    def exec(self, container: str, argv: list[str], timeout: float = 120) -> tuple[int, str]:
        result = self.client.containers.get(container).exec_run(argv, demux=True)
        out, err = result.output
        text = (out or b"").decode(errors="replace") if result.exit_code == 0 else (err or out or b"").decode(errors="replace")
        return result.exit_code, text

    def service_container(self, project: str, service: str) -> dict | None:
        found = self.api.containers(all=True, filters={"label": [f"com.docker.compose.project={project}",
                                                                   f"com.docker.compose.service={service}",
                                                                   "com.docker.compose.oneoff=False"]})
        return self.api.inspect_container(found[0]["Id"]) if found else None

    def logs(self, container: str, since: str) -> str:
        return self.api.logs(container, stdout=True, stderr=True, since=_epoch(since)).decode(errors="replace")

    def version(self) -> dict:
        return self.client.version()


def docker_client(prefer: str = "auto"):
    if prefer in ("auto", "sdk"):
        try:
            return DockerSDK()
        except Exception:  # noqa: BLE001 - SDK missing or no daemon socket: fall back to the CLI
            if prefer == "sdk":
                raise
    return DockerCLI(os.environ.get("DOCKER", "docker"))


# --- what ran -----------------------------------------------------------------------------------------

def container_record(inspect: dict, image: dict | None) -> dict:
    """The parts of `docker inspect` that identify what ran. Never the environment (secrets live there)."""
    cfg = inspect.get("Config") or {}
    labels = cfg.get("Labels") or {}
    state = inspect.get("State") or {}
    health = (state.get("Health") or {}).get("Status")
    image = image or {}
    repo_digests = image.get("RepoDigests") or []
    return {
        "service": labels.get("com.docker.compose.service"),
        "name": (inspect.get("Name") or "").lstrip("/"),
        "id": inspect.get("Id"),
        "image_ref": cfg.get("Image"),
        "image_id": inspect.get("Image"),
        "repo_digests": repo_digests,
        # A locally built image (suffix, collector) has no repo digest; its image id is its identity.
        "pinned_by": "repo_digest" if repo_digests else "image_id",
        "image_created": image.get("Created"),
        "image_labels": {k: v for k, v in ((image.get("Config") or {}).get("Labels") or {}).items()
                         if k.startswith(("org.specstack.", "org.opencontainers."))},
        "entrypoint": cfg.get("Entrypoint"),
        "command": cfg.get("Cmd"),
        "cpuset": (inspect.get("HostConfig") or {}).get("CpusetCpus") or None,
        "started_at": state.get("StartedAt"),
        "status": state.get("Status"),
        "health": health,
        "compose_config_hash": labels.get("com.docker.compose.config-hash"),
        "compose_version": labels.get("com.docker.compose.version"),
    }


def parse_nvidia_smi(query_csv: str, header: str) -> dict:
    """`nvidia-smi --query-gpu=... --format=csv,noheader,nounits` rows and the plain output's header."""
    fields = ("index", "uuid", "name", "driver_version", "memory_total_mib", "memory_used_mib", "pci_bus_id")
    gpus = []
    for line in query_csv.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != len(fields):
            continue
        gpu = dict(zip(fields, parts))
        for key in ("memory_total_mib", "memory_used_mib"):
            gpu[key] = int(gpu[key]) if gpu[key].isdigit() else None
        gpus.append(gpu)
    cuda = re.search(r"CUDA Version:\s*([\d.]+)", header)
    driver = re.search(r"Driver Version:\s*([\d.]+)", header)
    return {"gpus": gpus, "driver_version": driver.group(1) if driver else (gpus[0]["driver_version"] if gpus else None),
            "cuda_version_driver": cuda.group(1) if cuda else None}


_GPU_QUERY = "index,uuid,name,driver_version,memory.total,memory.used,pci.bus_id"


def nvidia_smi_host(timeout: float = 30) -> dict | None:
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        query = subprocess.run([exe, f"--query-gpu={_GPU_QUERY}", "--format=csv,noheader,nounits"],
                               capture_output=True, text=True, timeout=timeout)
        plain = subprocess.run([exe], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"nvidia-smi did not answer in {timeout:.0f} s"}
    if query.returncode != 0:
        return {"error": f"nvidia-smi failed: {query.stderr.strip()}"}
    return {"source": "host", **parse_nvidia_smi(query.stdout, plain.stdout)}


def nvidia_smi_container(client, container: str) -> dict | None:
    rc, query = client.exec(container, ["nvidia-smi", f"--query-gpu={_GPU_QUERY}", "--format=csv,noheader,nounits"])
    if rc != 0:
        return None
    _, plain = client.exec(container, ["nvidia-smi"])
    return {"source": f"container {container}", **parse_nvidia_smi(query, plain)}


# Runs INSIDE the method's vLLM container (python3 of the vLLM image, HF_HOME=/hf-cache): rebuilds the
# plan with the container's own serve_args.py and environment, then finds each model's snapshot.
SNAPSHOT_SCRIPT = r'''
import hashlib, importlib.util, json, os, sys
from pathlib import Path

def snapshot(model, revision=None):
    info = {"id": model, "revision_requested": revision or "main"}
    p = Path(model)
    if p.is_dir():
        info["kind"] = "local"
        cfg = p / "config.json"
        info["config_sha256"] = hashlib.sha256(cfg.read_bytes()).hexdigest() if cfg.exists() else None
        return info
    info["kind"] = "hub"
    hub = Path(os.environ.get("HF_HUB_CACHE") or Path(os.environ.get("HF_HOME", "~/.cache/huggingface")).expanduser() / "hub")
    repo = hub / ("models--" + model.replace("/", "--"))
    ref = repo / "refs" / (revision or "main")
    if revision and len(revision) == 40 and (repo / "snapshots" / revision).is_dir():
        commit = revision
    elif ref.exists():
        commit = ref.read_text().strip()
    else:
        info["snapshot"] = None
        info["error"] = "not in the Hugging Face cache at " + str(repo)
        return info
    snap = repo / "snapshots" / commit
    info["snapshot"] = commit
    info["files"] = sorted(str(f.relative_to(snap)) for f in snap.rglob("*") if f.is_file() or f.is_symlink())
    cfg = snap / "config.json"
    info["config_sha256"] = hashlib.sha256(cfg.read_bytes()).hexdigest() if cfg.exists() else None
    return info

services = sys.argv[1]
method = sys.argv[2]
platform = sys.argv[3] if len(sys.argv) > 3 else "gpu-container"
spec = importlib.util.spec_from_file_location("serve_args", os.path.join(services, "serve_args.py"))
sa = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sa)
override = os.environ.get("SPECSTACK_SPEC_OVERRIDE") or None
plan = sa.build(method, model_set_name=os.environ.get("SPECSTACK_MODEL_SET", "default"),
                platform=platform, spec_override=json.loads(override) if override else None)
flags = plan["flags"]
models = [dict(role="target", **snapshot(plan["target"], flags.get("revision")))]
sc = plan["speculative_config"] or {}
if sc.get("model"):
    models.append(dict(role="speculative", **snapshot(sc["model"], sc.get("revision"))))
elif sc.get("method") == "mtp":
    models.append(dict(role="speculative", same_as="target", id=plan["target"]))
runtime = {"python": sys.version.split()[0]}
try:
    import importlib.metadata as md
    runtime["vllm"] = md.version("vllm")
except Exception as e:
    runtime["vllm"] = None
# torch's version and CUDA build, read from torch/version.py: importing torch would take seconds.
runtime["torch"] = runtime["torch_cuda"] = None
try:
    import importlib.metadata as md, re
    runtime["torch"] = md.version("torch")
    spec = importlib.util.find_spec("torch")
    text = Path(list(spec.submodule_search_locations)[0], "version.py").read_text()
    m = re.search(r"^cuda(?::[^=]*)?\s*=\s*['\"]([^'\"]+)['\"]", text, re.M)
    runtime["torch_cuda"] = m.group(1) if m else None
except Exception:
    pass
print(json.dumps({"plan": {"method": plan["method"], "target": plan["target"], "model_set": plan["model_set"],
                           "argv": plan["argv"], "speculative_config": plan["speculative_config"]},
                  "models": models, "runtime": runtime}))
'''


def models_in_container(client, container: str, method: str, services: str = "/services",
                        platform: str = "gpu-container") -> dict:
    rc, out = client.exec(container, ["python3", "-c", SNAPSHOT_SCRIPT, services, method, platform])
    if rc != 0:
        return {"error": f"snapshot lookup in {container} failed (exit {rc}): {out.strip()[-400:]}"}
    try:
        return json.loads(out.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        return {"error": f"snapshot lookup in {container} printed no JSON: {out.strip()[-400:]}"}


def cpu_host() -> dict:
    """The host's CPU model and core count (the CPU platform's counterpart of nvidia-smi)."""
    model = None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"source": "host", "model": model, "cores": os.cpu_count()}


def record(client, *, run_id: str, method: str, results: Path, project: str = PROJECT,
           services: str = "/services", platform: str = "gpu-container") -> Path:
    """Write results/<run-id>/host-provenance/<method>.json while the method's server is running."""
    containers = client.project_containers(project)
    if not containers:
        raise HostError(f"no running container of compose project {project!r}; start the stack first")
    records = []
    for c in containers:
        ref = c.get("Image")
        try:
            image = client.image(ref) if ref else None
        except Exception:  # noqa: BLE001 - an image removed meanwhile: keep what inspect said
            image = None
        records.append(container_record(c, image))
    service = f"vllm-{method}"
    vllm = next((c for c in containers
                 if ((c.get("Config") or {}).get("Labels") or {}).get("com.docker.compose.service") == service), None)
    if vllm is None:
        raise HostError(f"service {service} is not running in project {project!r}; nothing to record for {method}")
    vllm_name = (vllm.get("Name") or "").lstrip("/")
    if platform.startswith("cpu"):
        gpu = None
        cpu = {**cpu_host(), "server_cpuset": (vllm.get("HostConfig") or {}).get("CpusetCpus") or None}
    else:
        gpu = nvidia_smi_host() or nvidia_smi_container(client, vllm_name) or {
            "error": "nvidia-smi not found on the host or in the container"}
        cpu = None
    server_version = client.version() or {}
    doc = {
        "schema": SCHEMA,
        "run_id": run_id,
        "method": method,
        "recorded_at": _now(),
        "compose_project": project,
        "docker_server": {k: server_version.get(k) for k in ("Version", "ApiVersion", "Os", "Arch")},
        "containers": sorted(records, key=lambda r: r["service"] or ""),
        "vllm_container": vllm_name,
        "platform": platform,
        "gpu": gpu,
        "cpu": cpu,
        "server": models_in_container(client, vllm_name, method, services, platform),
    }
    path = Path(results) / run_id / "host-provenance" / f"{method}.json"
    atomic_write(path, json.dumps(doc, indent=2) + "\n")
    return path


def _epoch(rfc3339: str) -> float:
    """Docker's UTC timestamps (nanosecond fractions, which datetime cannot parse) as seconds."""
    whole = datetime.strptime(rfc3339[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc).timestamp()
    frac = re.match(r"\.(\d+)", rfc3339[19:])
    return whole + (float("0." + frac.group(1)) if frac else 0.0)


def save_server_log(client, *, run_id: str, method: str, results: Path | str = "results",
                    project: str = PROJECT) -> Path:
    """results/<run-id>/host-provenance/<method>.server.log: this start's lines of the method's server
    container. Compose starts a stopped container again with its old log, so only lines since the
    container's StartedAt are kept; the collector reads the engine facts (model runner ...) from it."""
    service = f"vllm-{method}"
    c = client.service_container(project, service)
    if c is None:
        raise HostError(f"no container of service {service} in compose project {project!r}; nothing to save")
    started = (c.get("State") or {}).get("StartedAt") or ""
    if not started or started.startswith("0001-"):
        raise HostError(f"{service} never started; it has no log of this run")
    path = Path(results) / run_id / "host-provenance" / f"{method}.server.log"
    return atomic_write(path, client.logs(c["Id"], started))


# --- host pre-check (GPU), before anything is pulled --------------------------------------------------

# vllm/vllm-openai's plain tags are built on CUDA 13 since v0.20.0 (the `-cu129` tags on CUDA 12.9). CUDA 13
# needs driver R580+; CUDA 12 images run on R525+ through CUDA's minor-version compatibility.
MIN_DRIVER = {13: 580, 12: 525}
# vLLM 0.32.0's CUDA arch list starts at sm_75; bfloat16 needs sm_80.
MIN_CC = {"bfloat16": (8, 0), "auto": (7, 5), "float16": (7, 5)}


def image_cuda_major(ref: str) -> int:
    """13 for a plain tag, 12 for a -cu12x tag (vllm/vllm-openai's naming)."""
    m = re.search(r"-cu(\d\d)\d*$", parse_reference(ref)["tag"] or "")
    return int(m.group(1)) if m else 13


def gpu_host_problems(gpu: str, image: str, dtype: str, runner=subprocess.run) -> list[str]:
    """Why this host's driver or GPU cannot run `image` with `dtype`, each with its fix; [] when it can."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return ["nvidia-smi not found on the host: install the NVIDIA driver (it ships nvidia-smi)"]
    out = runner([exe, "-i", str(gpu), "--query-gpu=driver_version,compute_cap", "--format=csv,noheader"],
                 capture_output=True, text=True, timeout=30)
    if out.returncode != 0:
        return [f"nvidia-smi -i {gpu} failed: {(out.stderr or out.stdout).strip()}; is GPU={gpu} right?"]
    driver, _, cc = (p.strip() for p in out.stdout.strip().splitlines()[0].partition(","))
    problems = []
    cuda = image_cuda_major(image)
    major = int(driver.split(".")[0]) if driver.split(".")[0].isdigit() else 0
    if major < MIN_DRIVER[cuda]:
        fix = ("upgrade the driver to R580 or newer, or use the CUDA 12.9 build: put "
               f"VLLM_IMAGE={parse_reference(image)['name']}:{(parse_reference(image)['tag'] or 'v0.32.0')}-cu129 "
               "into images.env.local" if cuda == 13 else f"upgrade the driver to R{MIN_DRIVER[cuda]} or newer")
        problems.append(f"driver {driver} is too old for {image} (CUDA {cuda} needs R{MIN_DRIVER[cuda]}+): {fix}")
    want = MIN_CC.get(dtype, MIN_CC["auto"])
    have = tuple(int(x) for x in cc.split(".")) if re.match(r"^\d+\.\d+$", cc) else None
    if have is None:
        problems.append(f"nvidia-smi reports no compute capability for GPU {gpu} ({cc!r})")
    elif have < want:
        problems.append(f"GPU {gpu} has compute capability {cc}; {dtype} in vLLM 0.32.0 needs "
                        f"{want[0]}.{want[1]}+ (sm_{want[0]}{want[1]}): use a newer GPU"
                        + (", or dtype float16 in services/methods.toml [common]" if dtype == "bfloat16" else ""))
    return problems


# --- GPU memory ---------------------------------------------------------------------------------------

def gpu_memory_used(gpu: str, runner=subprocess.run) -> int:
    exe = shutil.which("nvidia-smi")
    if exe is None:
        raise HostError("nvidia-smi not found on the host; install the NVIDIA driver utilities "
                        "(it ships with the driver)")
    out = runner([exe, "-i", str(gpu), "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                 capture_output=True, text=True, timeout=30)
    if out.returncode != 0:
        raise HostError(f"nvidia-smi -i {gpu} failed: {out.stderr.strip() or out.stdout.strip()}")
    return int(out.stdout.strip().splitlines()[0])


def wait_gpu_free(gpu: str, *, max_used_mib: int, timeout: float, poll: float = 2.0,
                  read=None, sleep=time.sleep, clock=time.monotonic, log=print) -> int:
    """Return the used MiB once it is <= max_used_mib on two polls in a row; HostError after timeout."""
    read = read or (lambda: gpu_memory_used(gpu))
    deadline = clock() + timeout
    below = 0
    while True:
        used = read()
        below = below + 1 if used <= max_used_mib else 0
        if below >= 2:
            return used
        if clock() > deadline:
            raise HostError(f"GPU {gpu} still has {used} MiB in use {timeout:.0f} s after the server stopped "
                            f"(limit {max_used_mib} MiB). Check `nvidia-smi` for a leftover process "
                            "(`make status`), or raise GPU_FREE_MIB if another tenant uses this GPU.")
        log(f"GPU {gpu}: {used} MiB in use, waiting until <= {max_used_mib} MiB")
        sleep(poll)


# --- Prometheus file_sd --------------------------------------------------------------------------------

def write_targets(path: Path, target: str | None, labels: dict[str, str]) -> Path:
    """The file Prometheus's file_sd reads: one target with labels, or [] (no server) when target is None."""
    groups = [] if target is None else [{"targets": [target], "labels": labels}]
    return atomic_write(Path(path), json.dumps(groups) + "\n", mode=0o644)


# --- image lock ---------------------------------------------------------------------------------------

_ACCEPT = ", ".join((
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.v2+json",
))
FLOATING_TAGS = {"latest", "stable", "main", "master", "nightly", "edge", "dev", "rolling", "release", "lts"}


def parse_reference(ref: str) -> dict:
    """Split an image reference into registry, repository, tag and digest (Docker's rules)."""
    rest, _, digest = ref.partition("@")
    name, tag = rest, None
    last = rest.rsplit("/", 1)[-1]
    if ":" in last:
        name, tag = rest.rsplit(":", 1)
    first = name.split("/", 1)[0]
    if "/" in name and ("." in first or ":" in first or first == "localhost"):
        registry, repo = name.split("/", 1)
    else:
        registry, repo = "docker.io", name
    if registry == "docker.io" and "/" not in repo:
        repo = f"library/{repo}"
    return {"registry": registry, "repository": repo, "tag": tag, "digest": digest or None, "name": name}


def pin_problem(ref: str) -> str | None:
    """Why an image reference is not pinned, or None. Exact version tags and digests are pinned."""
    parts = parse_reference(ref)
    if parts["digest"] is not None and not DIGEST_RE.match(parts["digest"]):
        return f"{ref}: malformed digest (expected sha256:<64 hex>)"
    tag = parts["tag"]
    if tag is None:
        return None if parts["digest"] else f"{ref}: no tag and no digest means `latest`"
    if tag.lower() in FLOATING_TAGS:
        return f"{ref}: tag {tag!r} floats (it moves to new builds)"
    if parts["digest"]:
        return None
    if not re.match(r"^v?\d+\.\d+\.\d+([.\-+][0-9A-Za-z.\-+]*)?$", tag):
        return f"{ref}: tag {tag!r} is not an exact version (x.y.z); pin one or run `make lock`"
    return None


def _registry_host(registry: str) -> tuple[str, str]:
    if registry == "docker.io":
        return "https", "registry-1.docker.io"
    insecure = registry.startswith(("localhost", "127.0.0.1", "[::1]"))
    return ("http" if insecure else "https"), registry


def _bearer_token(challenge: str, timeout: float) -> str | None:
    params = dict(re.findall(r'(\w+)="([^"]*)"', challenge))
    realm = params.pop("realm", None)
    if not realm:
        return None
    url = realm + "?" + urllib.parse.urlencode(params)
    with urllib.request.urlopen(url, timeout=timeout) as r:
        body = json.loads(r.read())
    return body.get("token") or body.get("access_token")


def resolve_digest(ref: str, timeout: float = 30) -> str:
    """The digest the tag of `ref` points to now (the multi-arch index when there is one)."""
    parts = parse_reference(ref)
    if not parts["tag"]:
        raise HostError(f"{ref}: needs a tag to resolve")
    scheme, host = _registry_host(parts["registry"])
    url = f"{scheme}://{host}/v2/{parts['repository']}/manifests/{parts['tag']}"
    headers = {"Accept": _ACCEPT}
    for _ in range(2):
        req = urllib.request.Request(url, method="HEAD", headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                digest = r.headers.get("Docker-Content-Digest")
                if digest:
                    return digest
            with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=timeout) as r:
                return "sha256:" + hashlib.sha256(r.read()).hexdigest()
        except urllib.error.HTTPError as e:
            challenge = e.headers.get("WWW-Authenticate", "")
            if e.code == 401 and challenge.lower().startswith("bearer") and "Authorization" not in headers:
                token = _bearer_token(challenge, timeout)
                if token:
                    headers["Authorization"] = f"Bearer {token}"
                    continue
            raise HostError(f"{ref}: registry answered HTTP {e.code} for {url}") from None
        except urllib.error.URLError as e:
            raise HostError(f"{ref}: cannot reach {host} ({e.reason})") from None
    raise HostError(f"{ref}: registry {host} refused the anonymous token; `docker login {parts['registry']}`?")


def _resolve_with_buildx(ref: str) -> str:
    out = subprocess.run(["docker", "buildx", "imagetools", "inspect", ref, "--format", "{{json .Manifest}}"],
                         capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise HostError(f"{ref}: docker buildx imagetools inspect failed: {out.stderr.strip()}")
    return json.loads(out.stdout)["digest"]


def read_lock(path: Path) -> dict[str, str]:
    images = {}
    for n, line in enumerate(Path(path).read_text().splitlines(), 1):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        key, sep, value = s.partition("=")
        if not sep or not re.match(r"^[A-Z][A-Z0-9_]*_IMAGE$", key) or not value or " " in value:
            raise HostError(f"{path}:{n}: expected NAME_IMAGE=reference, got {line!r}")
        images[key] = value
    return images


def lock(path: Path, resolver=resolve_digest, log=print, keys: list[str] | None = None) -> dict[str, str]:
    """Rewrite every NAME_IMAGE=repo:tag line (or only those of `keys`) as repo:tag@sha256:..., keeping
    comments and order."""
    path = Path(path)
    images = read_lock(path)
    unknown = sorted(set(keys or []) - set(images))
    if unknown:
        raise HostError(f"{path} has no line for {', '.join(unknown)}; it has {', '.join(images)}")
    resolved = {}
    for key, ref in images.items():
        if keys and key not in keys:
            log(f"{key}={ref} (left as it is)")
            continue
        parts = parse_reference(ref)
        tagged = f"{parts['name']}:{parts['tag']}" if parts["tag"] else parts["name"]
        try:
            digest = resolver(tagged)
        except HostError as first:
            try:
                digest = _resolve_with_buildx(tagged)
            except (HostError, OSError, subprocess.TimeoutExpired, KeyError, json.JSONDecodeError):
                raise first from None
        if not DIGEST_RE.match(digest):
            raise HostError(f"{tagged}: registry returned a malformed digest {digest!r}")
        resolved[key] = f"{tagged}@{digest}"
        log(f"{key}={resolved[key]}")
    lines = []
    for line in path.read_text().splitlines():
        key = line.split("=", 1)[0].strip()
        lines.append(f"{key}={resolved[key]}" if key in resolved and not line.lstrip().startswith("#") else line)
    atomic_write(path, "\n".join(lines) + "\n")
    return resolved


# --- command line -------------------------------------------------------------------------------------

def _label(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


def _cmd(args: argparse.Namespace) -> int:
    try:
        if args.containers_cmd == "record":
            path = record(docker_client(args.docker), run_id=args.run_id, method=args.method,
                          results=args.results, project=args.project, platform=args.platform)
            print(f"host provenance: {path}")
        elif args.containers_cmd == "save-log":
            path = save_server_log(docker_client(args.docker), run_id=args.run_id, method=args.method,
                                   results=args.results, project=args.project)
            print(f"server log: {path}")
        elif args.containers_cmd == "check-gpu-host":
            problems = gpu_host_problems(args.gpu, args.image, args.dtype)
            for p in problems:
                print(f"host check: {p}", file=sys.stderr)
            return 2 if problems else 0
        elif args.containers_cmd == "wait-gpu-free":
            used = wait_gpu_free(args.gpu, max_used_mib=args.max_used_mib, timeout=args.timeout, poll=args.poll)
            print(f"GPU {args.gpu} free: {used} MiB in use")
        elif args.containers_cmd == "targets":
            write_targets(args.out, None if args.clear else args.target, dict(args.label))
        elif args.containers_cmd == "lock":
            lock(args.file, keys=args.keys or None)
        elif args.containers_cmd == "check-lock":
            problems = [p for ref in read_lock(args.file).values() if (p := pin_problem(ref))]
            for p in problems:
                print(f"not pinned: {p}", file=sys.stderr)
            return 1 if problems else 0
    except HostError as e:
        print(f"specstack containers: {e}", file=sys.stderr)
        return 2
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="containers_cmd", required=True, metavar="ACTION")
    r = sub.add_parser("record", help="write results/<run-id>/host-provenance/<method>.json")
    r.add_argument("--run-id", required=True)
    r.add_argument("--method", required=True)
    r.add_argument("--results", type=Path, default=Path("results"))
    r.add_argument("--project", default=PROJECT)
    r.add_argument("--docker", choices=("auto", "sdk", "cli"), default="auto",
                   help="how to reach Docker: the SDK if importable (auto), or the CLI named by $DOCKER")
    r.add_argument("--platform", default="gpu-container", choices=("gpu-container", "cpu-container"),
                   help="the serve platform of the containers (methods.toml): GPU or CPU facts")
    sl = sub.add_parser("save-log", help="write results/<run-id>/host-provenance/<method>.server.log "
                                         "(this start's lines of the method's server container)")
    sl.add_argument("--run-id", required=True)
    sl.add_argument("--method", required=True)
    sl.add_argument("--results", type=Path, default=Path("results"))
    sl.add_argument("--project", default=PROJECT)
    sl.add_argument("--docker", choices=("auto", "sdk", "cli"), default="auto")
    hc = sub.add_parser("check-gpu-host", help="refuse a driver or GPU the vLLM image cannot use (before pulling)")
    hc.add_argument("--gpu", default=os.environ.get("SPECSTACK_GPU", "0"))
    hc.add_argument("--image", required=True, help="the VLLM_IMAGE reference that will be pulled")
    hc.add_argument("--dtype", default="bfloat16")
    w = sub.add_parser("wait-gpu-free", help="wait (bounded) until a GPU's memory is released")
    w.add_argument("--gpu", default=os.environ.get("SPECSTACK_GPU", "0"))
    w.add_argument("--max-used-mib", type=int, default=1024)
    w.add_argument("--timeout", type=float, default=300)
    w.add_argument("--poll", type=float, default=2.0, help="seconds between nvidia-smi polls")
    t = sub.add_parser("targets", help="write the Prometheus file_sd target file")
    t.add_argument("--out", type=Path, required=True)
    g = t.add_mutually_exclusive_group(required=True)
    g.add_argument("--target", help="host:port of the vLLM server")
    g.add_argument("--clear", action="store_true", help="no server: write []")
    t.add_argument("--label", type=_label, action="append", default=[], metavar="KEY=VALUE")
    lk = sub.add_parser("lock", help="resolve every image tag of a lock file to its digest")
    lk.add_argument("--file", type=Path, default=Path("images.lock"))
    lk.add_argument("--keys", nargs="*", metavar="NAME_IMAGE", help="pin only these lines (default: all)")
    ck = sub.add_parser("check-lock", help="fail if an image of the lock file is not pinned")
    ck.add_argument("--file", type=Path, default=Path("images.lock"))


def register(subparsers) -> None:
    p = subparsers.add_parser("containers", help="host-side helpers of the GPU stack (provenance, GPU, lock)")
    add_arguments(p)
    p.set_defaults(func=_cmd)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="containers.py", description=__doc__.splitlines()[0])
    add_arguments(p)
    return _cmd(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
