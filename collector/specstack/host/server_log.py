"""`save-log`: this start's lines of the method's server container, kept in the bundle (the collector reads the
engine facts, model runner ..., from them)."""

from __future__ import annotations

from pathlib import Path

from specstack.host import HostError
from specstack.host.engine import PROJECT
from specstack.results import layout
from specstack.results.files import atomic_write_text

NEVER = "1970-01-01T00:00:00Z"  # --since for the whole log
START_LINE = "vllm serve "  # services/serve_args.py prints it, then execs the server: one per start


def this_start(log: str) -> str | None:
    """The lines from the last start line on, or None for a log without one (an entrypoint of the user's own)."""
    lines = log.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line.startswith(START_LINE)]
    return "".join(lines[starts[-1] :]) if starts else None


def save_server_log(
    client,
    *,
    run_id: str,
    method: str,
    results: Path | str = "results",
    project: str = PROJECT,
    name: str | None = None,
) -> Path:
    """results/<run-id>/host-provenance/<name>.server.log (name: the result's folder, default the method): this
    start's lines of the method's server container. Compose starts a stopped container again with its old log; the
    collector reads the engine facts (model runner ...) from this start's lines only."""
    service = f"vllm-{method}"
    c = client.service_container(project, service)
    if c is None:
        raise HostError(f"no container of service {service} in compose project {project!r}; nothing to save")
    state = c.get("State") or {}
    started, finished = state.get("StartedAt") or "", state.get("FinishedAt") or ""
    if not started or started.startswith("0001-"):
        raise HostError(f"{service} never started; it has no log of this run")
    # Each start begins with its own start line: cut there. Times are the fallback only: the engine stamps a line
    # when it reads it (StartedAt may come after the first line), and a restarted container's lines since its
    # previous run ended (FinishedAt) once missed the start line on a loaded CI host.
    log = client.logs(c["Id"], NEVER)
    kept = this_start(log)
    if kept is None:
        since = NEVER if finished.startswith("0001-") else finished if finished and finished < started else started
        kept = log if since == NEVER else client.logs(c["Id"], since)
    path = Path(results) / run_id / layout.host_server_log(name or method)
    return atomic_write_text(path, kept)
