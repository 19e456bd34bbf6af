"""A copy of the stack's files that a non-root user drives with make, as a user of the product does.

The copy (tracked and new files of the working tree, outside .gitignore) lives in its own folder owned by
that user, so results/ and .specstack/ never land in the developer's tree, and "results belong to the
invoking user, not root" is a real question even when the tests run as root. Every make call gets its own
compose project name and loopback ports, and a canary HF_TOKEN that must never be written anywhere."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from ..support import free_port
from . import engine

REPO = Path(__file__).resolve().parents[2]
# As .ci/run creates it: a system user in the docker group (the tests run make as this user when root).
CI_USER = "specstack-ci"
CI_USER_HINT = f"useradd --system --user-group --groups docker --no-create-home --shell /usr/sbin/nologin {CI_USER}"
HF_CANARY = "hf_specstackComposeCanary0123456789abcdef"
# What the stack needs from the repository (make, compose files, locks, services, collector sources).
STACK_PATHS = (
    "Makefile",
    "compose.yaml",
    "compose.cpu.yaml",
    "images.lock",
    "images.cpu.lock",
    "services",
    "images",
    "prometheus",
    "grafana/provisioning",
    "grafana/dashboards",
    "collector",
)
# Small and fast: every phase runs, a few requests each (a server start dominates a method's time).
RUN_ARGS = (
    "--tasks code --num-prompts 4 --perf-output-len 32 --acceptance-max-tokens 48 --concurrency 1,2 --warmup-requests 1"
)


def invoking_user() -> pwd.struct_passwd:
    if os.getuid() != 0:
        return pwd.getpwuid(os.getuid())
    try:
        user = pwd.getpwnam(CI_USER)
    except KeyError:
        pytest.fail(
            f"running as root: the compose tests drive make as the non-root user {CI_USER!r}, which "
            f"does not exist. Create it (.ci/run does): {CI_USER_HINT}"
        )
    groups = os.getgrouplist(user.pw_name, user.pw_gid)
    sock = Path("/var/run/docker.sock")
    if sock.exists() and sock.stat().st_gid not in groups:
        pytest.fail(f"user {CI_USER!r} cannot use {sock} (not in its group): usermod -aG docker {CI_USER}")
    return user


def _tracked_files() -> list[str]:
    out = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", *STACK_PATHS],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return [p for p in out.stdout.split("\0") if p and (REPO / p).is_file()]


class Stack:
    def __init__(self, project: str):
        self.user = invoking_user()
        self.root = Path(tempfile.mkdtemp(prefix="specstack-compose-"))
        self.root.chmod(0o755)
        self.dir = self.root / "repo"
        self.home = self.root / "home"
        for rel in _tracked_files():
            dst = self.dir / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / rel, dst)
        self.home.mkdir()
        for path in (self.dir, self.home):
            subprocess.run(
                ["chown", "-R", f"{self.user.pw_uid}:{self.user.pw_gid}", str(path)], check=True
            ) if os.getuid() == 0 else None
        self.project = project
        self.ports = {"VLLM_PORT": free_port(), "PROMETHEUS_PORT": free_port(), "GRAFANA_PORT": free_port()}
        self.logs = self.root / "logs"
        self.logs.mkdir()

    @property
    def results(self) -> Path:
        return self.dir / "results"

    @property
    def prometheus_url(self) -> str:
        return f"http://127.0.0.1:{self.ports['PROMETHEUS_PORT']}"

    def env(self, **extra: str) -> dict[str, str]:
        env = {
            "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
            "HOME": str(self.home),
            "LANG": "C.UTF-8",
            "HF_TOKEN": HF_CANARY,
            "COMPOSE_PROJECT_NAME": self.project,
            **{k: str(v) for k, v in self.ports.items()},
        }
        if os.environ.get("DOCKER_HOST"):
            env["DOCKER_HOST"] = os.environ["DOCKER_HOST"]
        env.update(extra)
        return env

    def argv(self, *args: str, env: dict[str, str] | None = None) -> list[str]:
        """make -C <copy> ARGS, as the invoking user, with exactly this environment."""
        pairs = [f"{k}={v}" for k, v in (env or self.env()).items()]
        base = ["env", "-i", *pairs, "make", "--no-print-directory", "-C", str(self.dir), *args]
        return ["runuser", "-u", self.user.pw_name, "--", *base] if os.getuid() == 0 else base

    def make(
        self, *args: str, timeout: float = 900, env: dict[str, str] | None = None, log: str | None = None
    ) -> tuple[subprocess.CompletedProcess, float]:
        """Run make; returns (completed process with stdout+stderr merged in .stdout, seconds)."""
        t0 = time.monotonic()
        out = subprocess.run(
            self.argv(*args, env=env), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout
        )
        seconds = time.monotonic() - t0
        (self.logs / f"{log or args[0]}.log").write_text(out.stdout)
        # The measured times docs/measured.md quotes (make run, make sweep on the CPU stack) come from here.
        with (self.logs / "timings.tsv").open("a") as f:
            f.write(f"{log or args[0]}\t{' '.join(args)}\t{out.returncode}\t{seconds:.1f}\n")
        return out, seconds

    def popen(self, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen:
        return subprocess.Popen(
            self.argv(*args, env=env), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
        )

    def volume(self, name: str) -> dict:
        (doc,) = engine.inspect(f"{self.project}_{name}", kind="volume")
        return doc

    def teardown(self) -> None:
        """Everything of the project goes, volumes included; then the copy. The make logs stay, in
        .specstack/test-logs/compose/ of the repository (gitignored), for a look after a failure."""
        self.make("down", "PLATFORM=cpu", timeout=300, log="teardown-down")
        for vol in engine.project_ids(self.project, "volume"):
            engine.docker("volume", "rm", "-f", vol, check=False)
        kept = REPO / ".specstack" / "test-logs" / "compose"
        shutil.rmtree(kept, ignore_errors=True)
        shutil.copytree(self.logs, kept)
        shutil.rmtree(self.root, ignore_errors=True)
