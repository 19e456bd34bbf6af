"""The real Docker engine, as the compose tests read it: the CLI (pinned by path, never an SDK that might
talk to another daemon), an event recorder that inspects every container of a project the moment it
is created and started (the collector's `run --rm` containers are gone afterwards), and a real registry on loopback."""

from __future__ import annotations

import json
import queue
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest
import requests

from ..support import free_port


def docker_cli() -> str:
    found = shutil.which("docker")
    if found is None:
        pytest.fail("the docker CLI is missing: .ci/run installs docker.io")
    return found


DOCKER = docker_cli()
# make runs pre-flight as a `compose run` of the server's own service, with this module as the command.
PREFLIGHT_MODULE = "specstack.cli.preflight"


# ... and, before it, the model fetch as a `compose run` of the same service with this script.
FETCH_SCRIPT = "/services/fetch_models.py"


def is_preflight(container: dict) -> bool:
    return PREFLIGHT_MODULE in (container.get("Args") or [])


def is_fetch(container: dict) -> bool:
    return FETCH_SCRIPT in (container.get("Args") or [])


def is_oneoff(container: dict) -> bool:
    """A `compose run` container (fetch, pre-flight, collector), not a service's own container."""
    return ((container.get("Config") or {}).get("Labels") or {}).get("com.docker.compose.oneoff") == "True"


def docker(*args: str, timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess:
    out = subprocess.run([DOCKER, *args], capture_output=True, text=True, timeout=timeout)
    if check and out.returncode != 0:
        raise AssertionError(f"docker {' '.join(args)} failed ({out.returncode}): {out.stderr.strip()}")
    return out


def inspect(*ids: str, kind: str = "container") -> list[dict]:
    if not ids:
        return []
    return json.loads(docker(kind, "inspect", *ids).stdout)


def project_ids(project: str, kind: str = "container") -> list[str]:
    """Every container (running or not), network or volume carrying the project's compose label."""
    label = f"label=com.docker.compose.project={project}"
    args = {
        "container": ["ps", "-a", "-q", "--no-trunc"],
        "network": ["network", "ls", "-q"],
        "volume": ["volume", "ls", "-q"],
    }[kind]
    return docker(*args, "--filter", label).stdout.split()


def service_of(container: dict) -> str | None:
    return ((container.get("Config") or {}).get("Labels") or {}).get("com.docker.compose.service")


class Events:
    """`docker events` (containers, volumes, networks) of one compose project while a block runs. Each
    container is inspected at its create and its start events, on the reader's thread, so a short-lived `run
    --rm` one-off is recorded even when it is gone by its start; the `docker exec`s into a server (its
    /run/secrets/hf_token, its process once healthy) run on a thread of their own, so they never delay an
    inspection."""

    def __init__(self, project: str):
        self.project = project
        self.events: list[dict] = []
        self.started: dict[str, dict] = {}  # container id -> inspect at start (or at create, if gone by start)
        self.start_ns: dict[str, int] = {}  # container id -> the engine's time of its start event
        self.secrets: dict[str, str] = {}  # container id -> content of /run/secrets/hf_token
        self.process: dict[str, dict] = {}  # container id -> pid 1's environment and argv once healthy
        self._created: dict[str, dict] = {}  # container id -> inspect at create
        self._execs: queue.Queue = queue.Queue()
        self._proc = None
        self._threads: list[threading.Thread] = []

    def __enter__(self) -> Events:
        self._proc = subprocess.Popen(
            [
                DOCKER,
                "events",
                "--format",
                "{{json .}}",
                "--filter",
                "type=container",
                "--filter",
                "type=volume",
                "--filter",
                "type=network",
                "--filter",
                f"label=com.docker.compose.project={self.project}",
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        self._threads = [threading.Thread(target=f, daemon=True) for f in (self._read, self._exec)]
        for thread in self._threads:
            thread.start()
        time.sleep(0.5)  # the subscription is live before the block starts anything
        return self

    def _read(self) -> None:
        for line in self._proc.stdout:
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue
            self.events.append(event)
            status = event.get("status")
            if status == "health_status: healthy":
                self._execs.put(("process", event["id"]))
            elif event.get("Type") == "container" and status in ("create", "start"):
                self._inspect(event)
        self._execs.put(None)  # the stream ended: the exec thread finishes its queue and stops

    def _inspect(self, event: dict) -> None:
        cid = event["id"]
        try:
            (found,) = inspect(cid)
        except AssertionError:
            found = None  # removed already: a one-off that ran and ended within the engine's event delivery
        if event["status"] == "create":
            if found is not None:
                self._created[cid] = found
            return
        self.start_ns[cid] = event["timeNano"]
        record = found or self._created.get(cid)
        if record is None:
            return  # gone at create and at start: nothing of it can be read any more
        self.started[cid] = record
        if (service_of(record) or "").startswith("vllm-"):
            self._execs.put(("secret", cid))

    def _exec(self) -> None:
        while (job := self._execs.get()) is not None:
            what, cid = job
            if what == "process":
                self.process[cid] = self._pid1(cid)
            else:
                out = docker("exec", cid, "cat", "/run/secrets/hf_token", check=False)
                self.secrets[cid] = out.stdout if out.returncode == 0 else f"(unreadable: {out.stderr})"

    @staticmethod
    def _pid1(cid: str) -> dict:
        """What the server process runs with (serve_args.py has exec'd vllm by then): PID 1's child, since the
        container's PID 1 is Docker's init (compose.yaml `init: true`), or PID 1 itself without one."""
        find = (
            'p=1; case "$(tr "\\0" " " </proc/1/cmdline)" in *docker-init*|*tini*) '
            'p=$(grep -l "^PPid:[[:space:]]*1$" /proc/[0-9]*/status | head -n1 | cut -d/ -f3);; esac; echo "$p"'
        )
        pid = docker("exec", cid, "sh", "-c", find, check=False).stdout.strip() or "1"
        env = docker("exec", cid, "cat", f"/proc/{pid}/environ", check=False).stdout
        argv = docker("exec", cid, "cat", f"/proc/{pid}/cmdline", check=False).stdout
        return {
            "pid": pid,
            "env": dict(kv.split("=", 1) for kv in env.split("\0") if "=" in kv),
            "argv": [a for a in argv.split("\0") if a],
        }

    def __exit__(self, *exc) -> None:
        time.sleep(1.0)  # the last die/destroy events arrive
        self._proc.terminate()
        self._proc.wait(10)
        for thread in self._threads:
            thread.join(60)

    def of(self, action: str, service_prefix: str = "") -> list[dict]:
        return [
            e
            for e in self.events
            if e.get("Type") == "container"
            and e.get("status") == action
            and (e.get("Actor", {}).get("Attributes", {}).get("com.docker.compose.service") or "").startswith(
                service_prefix
            )
        ]


def build_cache() -> dict[str, int]:
    """BuildKit's build cache records (`docker system df -v`): id -> usage count. A BuildKit build, cached or
    not, creates or uses records; it emits no image event on this engine (the classic builder emits `tag`)."""
    out = docker("system", "df", "-v", "--format", "{{json .BuildCache}}", timeout=300).stdout.strip()
    return {r["ID"]: int(r["UsageCount"]) for r in (json.loads(out) if out and out != "null" else [])}


class ImageEvents:
    """Every image event of the engine (build tags, pulls, loads...) while a block runs. Image events carry no
    compose project label, so this listens to all of them; the compose tests hold the engine alone."""

    def __init__(self):
        self.events: list[dict] = []
        self._proc = None
        self._thread = None

    def __enter__(self) -> ImageEvents:
        self._proc = subprocess.Popen(
            [DOCKER, "events", "--format", "{{json .}}", "--filter", "type=image"], stdout=subprocess.PIPE, text=True
        )
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()
        time.sleep(0.5)
        return self

    def _read(self) -> None:
        for line in self._proc.stdout:
            try:
                self.events.append(json.loads(line))
            except json.JSONDecodeError:
                continue

    def __exit__(self, *exc) -> None:
        time.sleep(1.0)
        self._proc.terminate()
        self._proc.wait(10)
        self._thread.join(10)

    def actions(self) -> list[tuple[str, str]]:
        """(action, image) of each event, e.g. ("tag", "specstack-collector:...") for a build."""
        return [
            (
                e.get("Action") or e.get("status"),
                (e.get("Actor") or {}).get("Attributes", {}).get("name") or e.get("id"),
            )
            for e in self.events
        ]


def intervals(events: Events, service_prefix: str) -> list[tuple[str, int, int]]:
    """(service, start ns, die ns) of every container of those services, from the engine's own clock."""
    out = []
    for start in events.of("start", service_prefix):
        dies = [
            e for e in events.of("die", service_prefix) if e["id"] == start["id"] and e["timeNano"] >= start["timeNano"]
        ]
        service = start["Actor"]["Attributes"]["com.docker.compose.service"]
        out.append((service, start["timeNano"], dies[0]["timeNano"] if dies else None))
    return sorted(out, key=lambda x: x[1])


class Registry:
    """Debian's docker-registry (CNCF distribution 2.8) on 127.0.0.1, storage in a temporary folder."""

    def __init__(self, workdir: Path):
        binary = shutil.which("docker-registry")
        if binary is None:
            pytest.fail("docker-registry is missing: apt-get install docker-registry (.ci/run does)")
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        config = workdir / "registry.yml"
        config.write_text(
            f"version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n"
            f"    rootdirectory: {workdir / 'data'}\nhttp:\n  addr: {self.address}\n"
        )
        self.log = open(workdir / "registry.log", "wb")  # noqa: SIM115 (the child process writes it past this block)
        self.proc = subprocess.Popen([binary, "serve", str(config)], stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while True:
            try:
                if requests.get(f"http://{self.address}/v2/", timeout=2).status_code == 200:
                    return
            except requests.RequestException:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                pytest.fail(f"docker-registry did not answer on {self.address}; see {workdir / 'registry.log'}")
            time.sleep(0.2)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(30)
        self.log.close()
