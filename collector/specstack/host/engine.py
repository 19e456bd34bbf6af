"""The Docker engine, reached through the docker SDK when it is importable (the project venv has it) or the
`docker` CLI: both give the Engine API's own JSON, so the callers never know which one answered."""

from __future__ import annotations

import json
import os
import re
import subprocess
from datetime import datetime, timezone

from specstack.host import HostError

PROJECT = os.environ.get("COMPOSE_PROJECT_NAME", "specstack")


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
            out = subprocess.run(
                [self.docker, "exec", container, *argv], capture_output=True, text=True, timeout=timeout
            )
        except subprocess.TimeoutExpired:
            return 124, f"timed out after {timeout:.0f} s"
        return out.returncode, out.stdout if out.returncode == 0 else (out.stderr or out.stdout)

    def service_container(self, project: str, service: str) -> dict | None:
        """The service's own container (running or stopped), never a one-off `compose run` of it."""
        ids = self._run(
            [
                "ps",
                "-a",
                "-q",
                "--no-trunc",
                "--filter",
                f"label=com.docker.compose.project={project}",
                "--filter",
                f"label=com.docker.compose.service={service}",
                "--filter",
                "label=com.docker.compose.oneoff=False",
            ]
        ).split()
        return json.loads(self._run(["inspect", ids[0]]))[0] if ids else None

    def logs(self, container: str, since: str) -> str:
        """stdout and stderr of the container from `since` (RFC 3339) on, in one stream."""
        try:
            out = subprocess.run(
                [self.docker, "logs", "--since", since, container],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                errors="replace",
                timeout=120,
            )
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
        text = (
            (out or b"").decode(errors="replace")
            if result.exit_code == 0
            else (err or out or b"").decode(errors="replace")
        )
        return result.exit_code, text

    def service_container(self, project: str, service: str) -> dict | None:
        found = self.api.containers(
            all=True,
            filters={
                "label": [
                    f"com.docker.compose.project={project}",
                    f"com.docker.compose.service={service}",
                    "com.docker.compose.oneoff=False",
                ]
            },
        )
        return self.api.inspect_container(found[0]["Id"]) if found else None

    def logs(self, container: str, since: str) -> str:
        # the SDK refuses since=0 (the whole log): no since then
        return self.api.logs(container, stdout=True, stderr=True, since=_epoch(since) or None).decode(errors="replace")

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


def _epoch(rfc3339: str) -> float:
    """Docker's UTC timestamps (nanosecond fractions, which datetime cannot parse) as seconds."""
    whole = datetime.strptime(rfc3339[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc).timestamp()
    frac = re.match(r"\.(\d+)", rfc3339[19:])
    return whole + (float("0." + frac.group(1)) if frac else 0.0)
