"""One method's vLLM server as a compose service (vllm-<method>), the steps host/lifecycle.py's flow of one method
calls in turn: prepare (its models into the cache, pre-flight in its image), start (its Prometheus target, up,
healthy), server_log and host_facts (into results/<run-id>/host-provenance/), stop. These are the steps of
server/backend.py's ServerBackend, which runs/native_server.py's NativeServer (`specstack run`'s own server) has
too; this one only knows compose.

`up --wait` alone is not trusted: compose 2.40.3 once returned 0 for a just-recreated server whose health was still
"starting" (the collector then found no server), so the health is checked here too, within the same WAIT_TIMEOUT.
A server that did not become healthy is killed, not stopped: vLLM 0.32.0 hangs on SIGTERM in the middle of its
start (its engine core waits minutes for a handshake), which held a stop for the whole 60 s grace; so is a server
still loading when the flow is interrupted (a healthy one is stopped)."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING

from specstack import interrupts
from specstack.host.engine import PROJECT, DockerCLI
from specstack.host.image_lock import read_lock
from specstack.host.provenance import record
from specstack.host.server_log import save_server_log
from specstack.host.stack import RESULTS, TARGETS, TARGETS_DIR, Place, port_hint
from specstack.host.targets import write_targets

if TYPE_CHECKING:
    from specstack.host.compose_stack import Stack
    from specstack.server.backend import ServerBackend

# The exception lines of a server's log (vLLM's own prefix optional): the first is usually the cause.
EXCEPTION_LINE = re.compile(r"^(\([^)]*\) ERROR [^\]]*\] )?[A-Za-z_.]*(Error|Exception): ")


class ComposeServer:
    """The server of `method` for one result (`result`: its bundle name, the method's own outside a parallel
    sweep) at `place`; k: a reproduced method's own K (None: make's K)."""

    def __init__(self, stack: Stack, method: str, *, run_id: str, place: Place, result: str, k: str | None = None):
        self.stack, self.method, self.run_id, self.place, self.result, self.k = stack, method, run_id, place, result, k
        self.svc = f"vllm-{method}"
        self.env = stack.env(place, method, k)
        # a slot's server has a target file of its own: Prometheus scrapes every slot's at once
        self.targets = TARGETS_DIR / f"vllm-{result}.json" if place.slot is not None else TARGETS
        self.started = False  # up was asked: from then on its log is saved whatever happens

    def prepare(self) -> int:
        """Its models into the cache (a one-off container of the method's own image, before the server: the health
        window is for loading, not downloading), then pre-flight in that image: 0, or 2."""
        s, sh, method, svc = self.stack.s, self.stack.sh, self.method, self.svc
        sh.say(f"--- {method}: models into the cache (services/fetch_models.py, in the server image)")
        if self.stack.compose(
            "--profile",
            method,
            "run",
            "--rm",
            "--no-deps",
            "--entrypoint",
            "python3",
            svc,
            "/services/fetch_models.py",
            "--method",
            method,
            "--platform",
            s.serve_platform,
            "--model-set",
            s.model_set,
            env=self.env,
        ):
            return 2
        interrupts.check()
        sh.say(f"--- {method}: pre-flight (vLLM's own parser and config classes, in the server image)")
        if self.stack.compose(
            "--profile",
            method,
            "run",
            "--rm",
            "--no-deps",
            "-v",
            f"{os.getcwd()}/collector/specstack:/opt/specstack/specstack:ro",
            "-e",
            "PYTHONPATH=/opt/specstack",
            "-e",
            "SPECSTACK_SERVICES_DIR=/services",
            "--entrypoint",
            "python3",
            svc,
            "-m",
            "specstack.cli.preflight",
            "--method",
            method,
            "--platform",
            s.serve_platform,
            "--model-set",
            s.model_set,
            env=self.env,
        ):
            return 2
        return 0

    def start(self) -> int:
        """Its Prometheus target, then the server up and healthy within WAIT_TIMEOUT: 0, or 1 (said why)."""
        s, sh, svc = self.stack.s, self.stack.sh, self.svc
        if not sh.dry_run:
            try:
                write_targets(self.targets, f"{svc}:8000", {"method": self.result, "run_id": self.run_id})
            except OSError as e:
                sh.say(f"specstack containers: cannot write {self.targets}: {e}", err=True)
                return 1
        sh.say(f"--- {self.method}: starting {svc} (models in the cache; waiting up to {s.wait} s for it to load)")
        self.started, deadline = True, time.monotonic() + int(s.wait)
        up = self.stack.compose(
            "--profile", self.method, "up", "-d", "--wait", "--wait-timeout", s.wait, "--no-build", svc, env=self.env
        )
        if sh.dry_run:
            return 0
        if up != 0 or not self.healthy(deadline):
            interrupts.check()
            self.not_healthy()
            return 1
        return 0

    def server_log(self) -> None:
        """This start's lines of its log into host-provenance/ (said, not fatal, when that fails)."""
        sh = self.stack.sh
        if sh.dry_run:
            return
        try:
            save_server_log(
                DockerCLI(self.stack.s.docker),
                run_id=self.run_id,
                method=self.method,
                name=self.result,
                results=RESULTS,
                project=PROJECT,
            )
        except Exception as e:  # noqa: BLE001 - a missing log is said, the method goes on
            sh.say(f"specstack containers: {e}", err=True)
            sh.say(f"warning: the server log of {self.method} not saved", err=True)

    def host_facts(self) -> None:
        """Host provenance (host/provenance.py): images, GPU or CPU, the slot, what the server loaded; said, not
        fatal, when it cannot be recorded."""
        s, sh, place = self.stack.s, self.stack.sh, self.place
        if sh.dry_run:
            return
        try:
            path = record(
                DockerCLI(s.docker),
                run_id=self.run_id,
                method=self.method,
                name=self.result,
                results=RESULTS,
                project=PROJECT,
                platform=s.serve_platform,
                slot=(place.gpu if s.gpu_platform else place.cpuset) if place.slot is not None else None,
                images=read_lock(Path(s.lock)),
            )
            sh.say(f"host provenance: {path}")
        except Exception as e:  # noqa: BLE001 - provenance missing is said, the method goes on
            sh.say(f"specstack containers: {e}", err=True)
            sh.say(f"warning: host provenance of {self.method} not recorded", err=True)

    def stop(self) -> None:
        """Whatever happened: its log saved (once up was asked), the server stopped (healthy, or none) or killed
        (still loading: no 60 s grace for a hung start), its Prometheus target cleared."""
        sh = self.stack.sh
        if self.started:
            self.server_log()
        cid = self.container()
        healthy = not cid or self.state(cid, "{{if .State.Health}}{{.State.Health.Status}}{{end}}") == "healthy"
        self.stack.compose("stop" if healthy else "kill", self.svc, env=self.env, quiet=True)
        if not sh.dry_run:
            try:
                write_targets(self.targets, None, {})
            except OSError as e:
                sh.say(f"specstack containers: cannot write {self.targets}: {e}", err=True)

    # --- its container -----------------------------------------------------------------------------------

    def container(self, *flags: str) -> str:
        return self.stack.compose_out("ps", *flags, "-q", self.svc)[1].strip()

    def state(self, cid: str, template: str) -> str:
        return self.stack.sh.capture([self.stack.s.docker, "inspect", "-f", template, cid])[1].strip()

    def healthy(self, deadline: float) -> bool:
        """The server's own health, checked within the same WAIT_TIMEOUT as `up --wait`."""
        cid = self.container()
        while cid:
            state = self.state(cid, "{{if .State.Health}}{{.State.Health.Status}}{{else}}{{.State.Status}}{{end}}")
            if state == "healthy":
                return True
            if state != "starting" or time.monotonic() >= deadline:
                return False
            interrupts.check()
            time.sleep(1)
        return False

    def not_healthy(self) -> None:
        """Its last log lines and the exceptions it logged, then killed; a container that never started is most
        often a port in use."""
        stack, sh, svc = self.stack, self.stack.sh, self.svc
        stack.compose("logs", "--no-color", "--tail", "60", svc, to_stderr=True)
        _, text = stack.compose_out("logs", "--no-color", "--no-log-prefix", svc, merge=True)
        errors = [line for line in text.splitlines() if EXCEPTION_LINE.match(line)][-6:]
        if errors:
            sh.say(f"--- exceptions {svc} logged (the first is usually the cause):\n" + "\n".join(errors), err=True)
        sh.say(f"{svc} did not become healthy (waited up to {stack.s.wait} s; its last log lines are above)", err=True)
        stack.compose("kill", svc, quiet=True)
        cid = self.container("-a")
        started = self.state(cid, "{{.State.StartedAt}}") if cid else ""
        if not started or started.startswith("0001-"):
            sh.say(f"{svc} never started; {port_hint()}", err=True)


_: type[ServerBackend] = ComposeServer  # mypy holds it to the protocol (an annotation: never evaluated at run time)
