"""The server of one method run of `specstack run`, started natively (`vllm serve` as a child process in its own
session, server/runtime.py start_native) or, on the url runtime, attached to (attach): the steps of
server/backend.py's ServerBackend, as host/compose_server.py's ComposeServer has them for `make run`. prepare has
nothing left to do (runs/checks.py checked the port, modules, models and vLLM's parser before any result folder
existed); start writes its Prometheus target and waits until it is ready; stop stops its process group (the short
INTERRUPT_GRACE when the run was interrupted, the group killed when the stop itself breaks, a stop it cannot
confirm recorded as stop_problem); server_log keeps this start's log in the bundle; host_facts is the record
`make run` (or a Slurm task) wrote on the host before the collector started. runs/method_run.py drives it."""

from __future__ import annotations

import contextlib
import json
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from specstack import events
from specstack.config.serving import Runtime
from specstack.results import layout
from specstack.results.bundle import MethodBundle
from specstack.results.files import atomic_write_json
from specstack.runs.options import Options
from specstack.server.runtime import Server, ServerError, attach, native_address, start_native, stop_native

if TYPE_CHECKING:
    from specstack.config.methods import ServePlan
    from specstack.server.backend import ServerBackend

# Seconds an interrupted run gives its server to stop before SIGKILL: short, since whoever sent the signal
# (timeout, a scheduler) may follow it with SIGKILL, and a harness killed mid-cleanup leaves the server behind.
INTERRUPT_GRACE = 10.0
STOP_TIMEOUT = 30.0  # the same, for a run that was not interrupted


class NativeServer:
    """The server of result `name` (the bundle's name) of method `plan` in `run_dir`; its log goes into `bundle`.
    `interrupted`: whether the run was interrupted (asked when it stops); `labels`: its Prometheus target's."""

    def __init__(
        self,
        opts: Options,
        plan: ServePlan,
        *,
        name: str,
        run_dir: Path,
        bundle: MethodBundle,
        labels: dict[str, str],
        interrupted: Callable[[], bool],
        console: Console,
        held: Server | None = None,
    ):
        self.opts, self.plan, self.name, self.run_dir, self.bundle = opts, plan, name, run_dir, bundle
        self.held = held  # native: the plan's server, held while the pre-flight ran (runs/checks.py); start releases it
        self.labels, self.interrupted, self.console = labels, interrupted, console
        self.server: Server | None = None  # once started and ready (a failed start stopped its own)
        self.stop_problem: str | None = None  # a stop that could not be confirmed: the measurements stand
        self.stopped = False

    @property
    def native(self) -> bool:
        return self.opts.runtime == Runtime.NATIVE

    @property
    def url(self) -> str:
        """Where the server will listen, known before it starts."""
        if not self.native:
            assert self.opts.url is not None  # validate(): the url runtime needs --url
            return self.opts.url
        host, port = native_address(self.plan)
        return f"http://{host}:{port}"

    def prepare(self) -> int:
        """Nothing left: runs/checks.py `check` refused what could be known wrong (port, modules, models, vLLM's
        own parser on the arguments) before any result folder existed. 0."""
        return 0

    def start(self) -> int:
        """Its Prometheus target (before the start: Prometheus discovers it while vLLM loads), then the server
        started (or attached to) and ready: 0; a start that fails raises (start_native has stopped it)."""
        opts, plan = self.opts, self.plan
        if opts.prometheus_targets:
            # Prometheus scrapes say up=0 until the server is ready, and scrape it from the first interval after
            labels = {**self.labels, **({"slot": opts.slot} if opts.slot is not None else {})}
            atomic_write_json(opts.prometheus_targets, [{"targets": [self.url.split("://", 1)[-1]], "labels": labels}])
        self.console.print(f"[bold]{plan.method}[/]: starting server ({opts.runtime})")
        events.emit("server.start", method=self.name, runtime=opts.runtime)
        with events.step("server start", method=self.name):
            if self.native:
                self.server = server = start_native(
                    plan,
                    self.bundle.path(layout.SERVER_LOG),
                    opts.ready_timeout,
                    port_wait=opts.port_wait,
                    held=self.held,
                )
            else:
                assert opts.url is not None  # validate(): the url runtime needs --url
                self.server = server = attach(opts.url, opts.served_model_name, opts.ready_timeout)
        process = server.process
        events.emit(
            "server.ready",
            method=self.name,
            seconds=server.ready_seconds,
            pid=process.pid if process is not None else None,
        )
        return 0

    def stop(self) -> None:
        """A server this run started: its whole process group stopped (runtime.stop_native: SIGTERM, SIGKILL after
        the grace), only INTERRUPT_GRACE seconds when the run was interrupted. A stop that cannot be confirmed is
        kept in stop_problem and said (the sweep's next start waits for the port); one that breaks otherwise (an
        interrupt) kills the group, then raises. Nothing to do for an attached server, a failed start, or again."""
        server = self.server
        if server is None or server.runtime != Runtime.NATIVE or self.stopped:
            return
        with events.step("stop server", method=self.name):
            try:
                stop_native(server, timeout=INTERRUPT_GRACE if self.interrupted() else STOP_TIMEOUT)
            except ServerError as e:  # the measurements stand
                self.stop_problem = str(e)
                self.console.print(f"[bold yellow]warning[/]: {e}")
            except BaseException:
                self.kill()
                raise
            finally:
                self.stopped = True

    def kill(self) -> None:
        """The server's whole group (its own session, runtime.start_native) killed: for a stop that broke."""
        process = self.server.process if self.server is not None else None
        if process is not None:
            with contextlib.suppress(OSError):
                os.killpg(process.pid, signal.SIGKILL)

    def log_file(self) -> Path:
        """Where this start's server log is: the one `vllm serve` wrote into the bundle, else (attached, or no
        server) the lines the host saved (`make run`: the compose server's log), which may not exist."""
        log = self.server.log_path if self.server is not None else None
        return log or self.host_file(layout.host_server_log)

    def server_log(self) -> None:
        """The bundle holds the server log on every path: a native server wrote it there; the host's copy is
        copied in."""
        log = self.log_file()
        if log.exists() and log.parent != self.bundle.staging:
            self.bundle.write_text(layout.SERVER_LOG, log.read_text(errors="replace"))

    def host_facts(self) -> dict | None:
        """What `make run` wrote on the GPU host before the collector started (container digests, nvidia-smi, HF
        snapshot hashes), or a Slurm task's facts; None for a plain native run."""
        path = self.host_file(layout.host_record)
        return (json.loads(path.read_text()) if path.exists() else {}) or None

    def host_file(self, name_of: Callable[[str], str]) -> Path:
        """What the host wrote for this result (name_of: a layout.host_* helper), else for its method (a result
        under another name, e.g. a parallel sweep's calibration run, is recorded under that name)."""
        own = self.run_dir / name_of(self.name)
        return own if own.exists() else self.run_dir / name_of(self.plan.method)


_: type[ServerBackend] = NativeServer  # mypy holds it to the protocol
