"""`record`: what ran for one method, written while its server runs to results/<run-id>/host-provenance/<method>.json:
image digests and labels (versions) of every running container of the compose project, the GPU (nvidia-smi,
driver, CUDA) or the CPUs (model, the server's cpuset), and what the server loaded (snapshot.py)."""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path

from specstack.host import HostError
from specstack.host.engine import PROJECT
from specstack.host.gpu import nvidia_smi_container, nvidia_smi_host
from specstack.host.snapshot import models_in_container
from specstack.results import layout
from specstack.results.bundle import update_manifest
from specstack.results.files import atomic_write_text

SCHEMA = "specstack.host_provenance/1"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


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
        "image_labels": {
            k: v
            for k, v in ((image.get("Config") or {}).get("Labels") or {}).items()
            if k.startswith(("org.specstack.", "org.opencontainers."))
        },
        "entrypoint": cfg.get("Entrypoint"),
        "command": cfg.get("Cmd"),
        "cpuset": (inspect.get("HostConfig") or {}).get("CpusetCpus") or None,
        "started_at": state.get("StartedAt"),
        "status": state.get("Status"),
        "health": health,
        "compose_config_hash": labels.get("com.docker.compose.config-hash"),
        "compose_version": labels.get("com.docker.compose.version"),
    }


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


def slot_of(gpu: dict | None, cpu: dict | None, slot: str, server_cpuset: str | None = None) -> dict:
    """The slot a parallel sweep gave the method: its GPU (index, UUID, name as nvidia-smi names them, and the
    cores its server was pinned to, if any) or the cpuset its server really got. Inside a container nvidia-smi
    sees the one GPU it was given (index 0 there)."""
    if cpu is not None:
        return {"cpuset": cpu.get("server_cpuset"), "asked": slot}
    gpus = (gpu or {}).get("gpus") or []
    inside = len(gpus) == 1 and not (gpu or {}).get("source", "").startswith("host")
    found = next((g for g in gpus if slot in (g.get("index"), g.get("uuid"))), gpus[0] if inside else None)
    if found is None:
        return {"asked": slot, "error": f"nvidia-smi lists no GPU {slot}", "cpuset": server_cpuset}
    # The container's own index is 0 whatever the host's is: then the host index is the one asked for, if any.
    index = (slot if slot.isdigit() else None) if inside else found.get("index")
    return {
        "asked": slot,
        "gpu_index": index,
        "gpu_uuid": found.get("uuid"),
        "gpu_name": found.get("name"),
        "cpuset": server_cpuset,
    }


def lock_images(client, lock: dict[str, str]) -> dict[str, dict]:
    """Each image of the stack's lock file (the collector's too, which is not running yet when make records):
    its reference, id and registry digests, what `make reproduce` pulls it by."""
    out: dict[str, dict] = {}
    for key, ref in lock.items():
        try:
            image = client.image(ref)
        except Exception as e:  # noqa: BLE001 - not on this engine (Grafana on CPU): said, not guessed
            out[key] = {"ref": ref, "error": str(e)}
            continue
        out[key] = {"ref": ref, "id": image.get("Id"), "repo_digests": image.get("RepoDigests") or []}
    return out


def record(
    client,
    *,
    run_id: str,
    method: str,
    results: Path,
    project: str = PROJECT,
    services: str = "/services",
    platform: str = "gpu-container",
    images: dict[str, str] | None = None,
    slot: str | None = None,
    name: str | None = None,
) -> Path:
    """Write results/<run-id>/host-provenance/<name>.json (name: the result's folder, default the method) while
    the method's server is running; in a parallel sweep (`slot`), the slot also goes into the run's manifest
    beside the result's status."""
    name = name or method
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
    vllm = next(
        (
            c
            for c in containers
            if ((c.get("Config") or {}).get("Labels") or {}).get("com.docker.compose.service") == service
        ),
        None,
    )
    if vllm is None:
        raise HostError(f"service {service} is not running in project {project!r}; nothing to record for {method}")
    vllm_name = (vllm.get("Name") or "").lstrip("/")
    if platform.startswith("cpu"):
        gpu = None
        cpu = {**cpu_host(), "server_cpuset": (vllm.get("HostConfig") or {}).get("CpusetCpus") or None}
    else:
        gpu = (
            nvidia_smi_host()
            or nvidia_smi_container(client, vllm_name)
            or {"error": "nvidia-smi not found on the host or in the container"}
        )
        cpu = None
    server_version = client.version() or {}
    doc = {
        "schema": SCHEMA,
        "run_id": run_id,
        "method": method,
        "result": name,
        "recorded_at": _now(),
        "compose_project": project,
        "docker_server": {k: server_version.get(k) for k in ("Version", "ApiVersion", "Os", "Arch")},
        "containers": sorted(records, key=lambda r: r["service"] or ""),
        "images": lock_images(client, images) if images is not None else None,
        "vllm_container": vllm_name,
        "platform": platform,
        "gpu": gpu,
        "cpu": cpu,
        "server": models_in_container(client, vllm_name, method, services, platform),
    }
    if slot is not None:
        doc["slot"] = slot_of(gpu, cpu, slot, (vllm.get("HostConfig") or {}).get("CpusetCpus") or None)
        update_manifest(Path(results) / run_id, methods={name: {"slot": doc["slot"]}})
    path = Path(results) / run_id / layout.host_record(name)
    atomic_write_text(path, json.dumps(doc, indent=2) + "\n")
    return path
