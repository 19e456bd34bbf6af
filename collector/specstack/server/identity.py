"""Who answers on a native server's port: the server this run started, or something else.

A /health 200 proves only that something answers. A server left behind by an earlier run (its harness killed
while it loaded), or a process that took the port between the port check and vLLM's bind (vLLM binds after
seconds of imports), answers just as well, and a run would measure it as the method asked for: on an H200 a
"baseline" was measured on a left-over draft_model server. A native server is therefore accepted only when
the socket listening on its port belongs to the process session this run started (`start_native` starts
`vllm serve` with start_new_session, so the API server and every child of it carry that session id).

Sockets come from psutil (the kernel's socket table joined with each process's open files). A listener of
another user shows without a pid; a sandboxed network stack may show none at all: then the server's own log
line "Starting vLLM server on <url>" is the evidence that it, and not something else, serves there.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import psutil

ANY_ADDRESS = ("0.0.0.0", "::", "")
SERVING_LINE = "Starting vLLM server on "  # vllm/entrypoints/launchers/api_server/entry.py, before uvicorn serves


@dataclass(frozen=True)
class Listener:
    """A socket listening on the port: its process (None when it belongs to another user) and command line."""

    pid: int | None
    cmdline: str = ""

    def describe(self) -> str:
        if self.pid is None:
            return "a process of another user (its pid is not visible)"
        return f"pid {self.pid} ({self.cmdline or '?'})"


def listeners(host: str, port: int) -> list[Listener]:
    """Every socket listening on host:port (or on every address at that port)."""
    try:
        conns = psutil.net_connections(kind="tcp")
    except (psutil.Error, OSError):
        return []
    found = set()
    for c in conns:
        if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port and c.laddr.ip in (host, *ANY_ADDRESS):
            found.add(Listener(c.pid, _cmdline(c.pid)) if c.pid else Listener(None))
    return sorted(found, key=lambda h: (h.pid is None, h.pid or 0))


def _cmdline(pid: int) -> str:
    try:
        return " ".join(psutil.Process(pid).cmdline())[:160]
    except psutil.Error:
        return "?"


def in_session(pid: int | None, session: int) -> bool:
    if pid is None:
        return False
    try:
        return os.getsid(pid) == session
    except OSError:  # gone, or not ours to ask
        return False


@dataclass(frozen=True)
class Ownership:
    """Whose socket listens on the port: "ours" (the session this run started), "foreign" (someone else's;
    `holders` names them) or "unseen" (no listener visible here: a sandboxed stack; decided by the log)."""

    status: str
    holders: tuple[Listener, ...] = ()
    evidence: str = ""


def port_owner(host: str, port: int, session: int, log_path: Path | None) -> Ownership:
    found = listeners(host, port)
    foreign = tuple(h for h in found if not in_session(h.pid, session))
    if foreign:
        return Ownership("foreign", foreign)
    if found:
        return Ownership(
            "ours",
            tuple(found),
            f"the listening socket belongs to the server's session (pid {', '.join(str(h.pid) for h in found)})",
        )
    if serving_logged(log_path, port):
        return Ownership(
            "ours", (), f"no listening socket visible on this host; the server's own log says it serves on port {port}"
        )
    return Ownership("unseen")


def serving_logged(log_path: Path | None, port: int) -> bool:
    if log_path is None or not log_path.exists():
        return False
    text = log_path.read_text(errors="replace")
    return any(SERVING_LINE in line and line.rstrip().endswith(f":{port}") for line in text.splitlines())


def foreign_message(host: str, port: int, holders: tuple[Listener, ...], own_pid: int) -> str:
    """The refusal: who answers instead of our server, and the fix."""
    who = ", ".join(h.describe() for h in holders)
    kill = next((f"`kill {h.pid}`" for h in holders if h.pid is not None), "its owner")
    return (
        f"port {host}:{port} is answered by {who}, not by the vllm serve this run started (pid {own_pid}); "
        f"refusing to measure a server this run did not start. Stop that process ({kill}) or pass --port, "
        "then rerun the same command"
    )
