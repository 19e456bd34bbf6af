"""`save-log`: this start's lines of the method's server container, kept in the bundle (the collector reads the
engine facts, model runner ..., from them)."""
from __future__ import annotations

from pathlib import Path

from specstack.host import HostError
from specstack.host.engine import PROJECT
from specstack.results import layout
from specstack.results.files import atomic_write_text


def save_server_log(client, *, run_id: str, method: str, results: Path | str = "results",
                    project: str = PROJECT, name: str | None = None) -> Path:
    """results/<run-id>/host-provenance/<name>.server.log (name: the result's folder, default the method): this
    start's lines of the method's server container. Compose starts a stopped container again with its old log, so only lines since the
    container's StartedAt are kept; the collector reads the engine facts (model runner ...) from it."""
    service = f"vllm-{method}"
    c = client.service_container(project, service)
    if c is None:
        raise HostError(f"no container of service {service} in compose project {project!r}; nothing to save")
    started = (c.get("State") or {}).get("StartedAt") or ""
    if not started or started.startswith("0001-"):
        raise HostError(f"{service} never started; it has no log of this run")
    path = Path(results) / run_id / layout.host_server_log(name or method)
    return atomic_write_text(path, client.logs(c["Id"], started))
