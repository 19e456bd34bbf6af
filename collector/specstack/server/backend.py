"""The one shape of a method's vLLM server, whoever runs it: prepare, start, server_log, host_facts, stop.

Two backends have it: `runs/native_server.py` `NativeServer` (`specstack run`: `vllm serve` as a child process,
or the url runtime's attached server) and `host/compose_server.py` `ComposeServer` (`make run`: a compose
service). Each declares it (`_: type[ServerBackend] = ...`, checked by mypy) and tests/server/test_backend.py
holds both to its signatures. Standard library only and Python 3.8-safe: host/ imports it (for mypy only) and
make starts host/ with the host's plain python3.
"""

from __future__ import annotations

from typing import Protocol


class ServerBackend(Protocol):
    """One start of one method's server. The flow calls prepare, start, then (whatever happened) stop; the
    server's log and the host's facts are asked for once it has run."""

    def prepare(self) -> int:
        """What must be true before the server starts, done or checked: its models where it will load them, its
        arguments through vLLM's own parser. 0, or nonzero having said why; nothing is running afterwards."""
        ...

    def start(self) -> int:
        """The server up and answering as ready (its Prometheus target written first, where one is asked): 0.
        A start that fails returns nonzero having said why, or raises; either way stop() is still called and
        leaves no server behind."""
        ...

    def server_log(self) -> None:
        """This start's server log kept in the method's result (never an earlier start's lines); a log that
        cannot be kept is said, not fatal."""
        ...

    def host_facts(self) -> object:
        """What the host knows about this start (images, GPU or CPUs, slot, what the server loaded), recorded
        into the run's host-provenance/ or returned as the record found there (None: none); a record that cannot
        be had is not fatal."""
        ...

    def stop(self) -> None:
        """The server stopped whatever happened before: safe after a failed or never-tried start, and harmless when
        called again. A server that does not stop in time is killed (its whole group or container), and
        its Prometheus target no longer points at it. A stop that cannot be confirmed is recorded or said, not
        raised, unless the stop itself was interrupted."""
        ...
