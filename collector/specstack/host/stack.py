"""The compose stack's settings (make's knobs, services/compose.mk) and how its commands run: `docker compose` with
the files, lock and variables of the platform, in the foreground, or for a slot of a parallel sweep with each line
of its output prefixed with the method's result name; `make -n` prints them instead.

services/methods.toml is read with regular expressions, as make read it with sed and awk: the host's python3 may
be older than 3.11 (no tomllib)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

from specstack.config import sweep
from specstack.host import HostError
from specstack.interrupts import Interrupted

# PLATFORM -> (serve platform of methods.toml, compose files, default lock file, default WAIT_TIMEOUT in seconds)
PLATFORMS = {
    "gpu": ("gpu-container", ("compose.yaml",), "images.lock", 3600),
    "cpu": ("cpu-container", ("compose.yaml", "compose.cpu.yaml"), "images.cpu.lock", 600),
}
METHODS_TOML = Path("services/methods.toml")
TARGETS_DIR = Path(".specstack/prometheus-targets")
TARGETS = TARGETS_DIR / "vllm.json"
GRAFANA_SECRET = Path(".specstack/secrets/grafana_admin_password")
RESULTS = Path("results")
# The host ports compose publishes (compose.yaml's defaults), each overridable by make's variable of that name.
PORTS = {"VLLM_PORT": "8000", "PROMETHEUS_PORT": "9090", "GRAFANA_PORT": "3000"}
# Said when a container does not start: the usual user-caused reason is a port another program holds.
PORT_HINT = (
    "if a port it publishes is in use (see the error above), choose free ones: VLLM_PORT=, PROMETHEUS_PORT=, "
    "GRAFANA_PORT= (now {vllm}, {prometheus}, {grafana})"
)


@dataclass
class MethodsToml:
    """What the stack needs from services/methods.toml: the methods, those with a speculative config (K applies
    to them only), each method's baseline, the dtype."""

    names: list[str]
    spec: list[str]
    baselines: dict[str, str]
    dtype: str
    model_sets: list[str] = field(default_factory=list)
    path: Path = METHODS_TOML

    @classmethod
    def read(cls, path: Path = METHODS_TOML) -> MethodsToml:
        names, spec, baselines, dtype, method, sets = [], [], {}, [], "", []
        for line in path.read_text().splitlines():
            m = re.match(r"^\[methods\.([^\]]*)\]\s*$", line)
            if m:
                names.append(m.group(1))
            m = re.match(r"^\[model_sets\.([A-Za-z0-9_-]+)\]\s*$", line)  # not its .revisions / .unpinned
            if m:
                sets.append(m.group(1))
            if line.startswith("["):
                m = re.match(r"^\[methods\.([^\]]*)\]", line)
                method = m.group(1) if m else ""
            if method and re.match(r"^speculative-config\s*=", line):
                spec.append(method)
            if method and re.match(r"^baseline\s*=", line):
                value = line.split('"', 1)[1] if '"' in line else line
                baselines[method] = value.split('"', 1)[0]
            m = re.match(r'^dtype = "(.*)"', line)
            if m:
                dtype.append(m.group(1))
        return cls(names, spec, baselines, "\n".join(dtype), sets, path)


def sweep_methods(path: Path = METHODS_TOML) -> dict:
    """services/methods.toml's [sweep], the one default list of a sweep: {"methods": [...], "mtp_methods": [...]}
    (make's SWEEP_METHODS and SWEEP_MTP_METHODS), checked against the methods; a HostError naming the fix."""
    try:
        return sweep.check(sweep.table_of(path.read_text()), MethodsToml.read(path).names, where=str(path))
    except sweep.SweepError as e:
        raise HostError(str(e)) from None


@dataclass
class Settings:
    """make's knobs, as services/compose.mk passes them (empty = not set)."""

    platform: str = "gpu"
    model_set: str = "default"
    gpu: str = "0"
    cpuset: str = ""
    gpus: str = ""
    cpusets: str = ""
    calibrate: str = ""
    k: str = ""
    prefix_caching: str = ""
    run_args: str = ""
    gpu_free_mib: str = "1024"
    gpu_free_timeout: str = "300"
    gpu_free_poll: str = "2"
    images_lock: str = ""
    wait_timeout: str | None = None  # None: the platform's default
    sweep_methods: str = ""
    run_id: str = ""
    report_args: str = ""  # empty: RUN_ID --results /results --seal
    docker: str = "docker"
    make: str = "make"
    methods: MethodsToml = field(default_factory=MethodsToml.read)

    @property
    def serve_platform(self) -> str:
        return PLATFORMS[self.platform][0]

    @property
    def gpu_platform(self) -> bool:
        return self.platform == "gpu"

    @property
    def lock(self) -> str:
        return self.images_lock or PLATFORMS[self.platform][2]

    @property
    def wait(self) -> str:
        return str(PLATFORMS[self.platform][3]) if self.wait_timeout is None else self.wait_timeout

    @property
    def sweep(self) -> list[str]:
        return self.sweep_methods.split()

    @property
    def parallel_slots(self) -> str:
        """GPUS (gpu) or CPUSETS (cpu): the slots of a parallel sweep; empty for a serial one."""
        return self.gpus if self.gpu_platform else self.cpusets

    @property
    def report(self) -> list[str]:
        return shlex.split(self.report_args) if self.report_args else [self.run_id, "--results", "/results", "--seal"]

    def spec_k(self, method: str, k: str | None = None) -> str:
        """K (or a reproduced method's own K) for a method with a speculative config; "" for plain decoding."""
        return (self.k if k is None else k) if method in self.methods.spec else ""

    def lock_files(self) -> list[str]:
        return [self.lock] + (["images.env.local"] if Path("images.env.local").exists() else [])

    def lock_ref(self, key: str) -> str:
        """An image reference of the lock file (images.env.local, read after it, wins)."""
        found = []
        for f in self.lock_files():
            try:
                text = Path(f).read_text()
            except OSError:
                continue
            found += [line[len(key) + 1 :] for line in text.splitlines() if line.startswith(key + "=")]
        words = " ".join(found).split()
        return words[-1] if words else ""

    def compose_argv(self) -> list[str]:
        files = [a for f in PLATFORMS[self.platform][1] for a in ("-f", f)]
        return [self.docker, "compose", *files, *[a for f in self.lock_files() for a in ("--env-file", f)]]


@dataclass
class Place:
    """Where one method's server runs: the make variables of a method (GPU, CPUSET) and, in a parallel sweep,
    its slot (index, GPU_CPUSET), its result name and the baseline result it is compared with."""

    gpu: str
    cpuset: str
    slot: int | None = None
    gpu_cpuset: str = ""


def port(name: str) -> str:
    """The host port of VLLM_PORT, PROMETHEUS_PORT or GRAFANA_PORT: the environment's (make's), else compose's."""
    return os.environ.get(name) or PORTS[name]


def port_hint() -> str:
    return PORT_HINT.format(vllm=port("VLLM_PORT"), prometheus=port("PROMETHEUS_PORT"), grafana=port("GRAFANA_PORT"))


def quote(value: str) -> str:
    """Single-quoted for the shell, as make writes VAR='value'."""
    return "'" + value.replace("'", "'\\''") + "'"


_print_lock = threading.Lock()


class Shell:
    """Runs the stack's commands. Foreground: the commands' output goes to the terminal as it comes, the
    flow's own lines to stdout or stderr. prefix: everything to stdout, each line as `[prefix] line` (a slot of a
    parallel sweep; several run at once). dry_run (make -n): print the commands, run none."""

    def __init__(self, prefix: str | None = None, dry_run: bool = False):
        self.prefix, self.dry_run = prefix, dry_run

    def say(self, text: str, err: bool = False) -> None:
        if self.prefix is not None:
            with _print_lock:
                for line in text.splitlines() or [""]:
                    sys.stdout.write(f"[{self.prefix}] {line}\n")
                sys.stdout.flush()
            return
        stream = sys.stderr if err else sys.stdout
        stream.write(text + "\n")
        stream.flush()

    def show(self, argv: list[str], env: dict[str, str] | None = None) -> None:
        """The command as a shell line; the token never, only where it comes from."""
        pairs = [f"{k}={quote(v)}" if k != "HF_TOKEN" else 'HF_TOKEN="${HF_TOKEN:-}"' for k, v in (env or {}).items()]
        self.say(" ".join(pairs + [shlex.quote(a) for a in argv]))

    def run(
        self,
        argv: list[str],
        env: dict[str, str] | None = None,
        quiet: bool = False,
        to_stderr: bool = False,
        echo: bool = False,
    ) -> int:
        """The command's exit status; quiet: its output discarded; to_stderr: its stdout onto stderr; echo: the
        command line said first (as make echoes a recipe line)."""
        if self.dry_run:
            self.show(argv, env)
            return 0
        if echo:
            self.show(argv)
        full = {**os.environ, **(env or {})}
        proc: subprocess.Popen  # of bytes, or of text where its lines are prefixed
        try:
            if quiet:
                proc = subprocess.Popen(argv, env=full, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            elif self.prefix is not None:
                proc = piped = subprocess.Popen(
                    argv,
                    env=full,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                    errors="replace",
                    bufsize=1,
                )
                assert piped.stdout is not None  # stdout=PIPE
                for line in piped.stdout:
                    self.say(line.rstrip("\n"))
            else:
                sys.stdout.flush()
                proc = subprocess.Popen(argv, env=full, stdout=sys.stderr if to_stderr else None)
        except FileNotFoundError:
            self.say(f"{argv[0]}: command not found", err=True)
            return 127
        return _wait(proc)

    def capture(self, argv: list[str], env: dict[str, str] | None = None, merge: bool = False) -> tuple[int, str]:
        """(exit status, stdout) of a query; stderr discarded, or merged into the text."""
        if self.dry_run:
            return 0, ""
        try:
            proc = subprocess.Popen(
                argv,
                env={**os.environ, **(env or {})},
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT if merge else subprocess.DEVNULL,
                text=True,
                errors="replace",
            )
        except FileNotFoundError:
            return 127, ""
        try:
            out, _ = proc.communicate()
        except Interrupted:
            _wait(proc)
            raise
        return proc.returncode, out


def _wait(proc: subprocess.Popen) -> int:
    """The exit status; interrupted, the command (which got the signal too) is given a minute to end first."""
    try:
        return proc.wait()
    except Interrupted:
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        raise
