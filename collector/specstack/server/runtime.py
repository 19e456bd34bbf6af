"""Runtimes: where the vLLM server of a method run comes from.

`native` starts `vllm serve` as a child process with the plan from services/serve_args.py and stops it
afterwards; `url` attaches to a server someone else started (a compose container, a remote host).
Both end in the same `Server` handle, checked ready by polling /health and /v1/models.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import requests

from specstack.config.serving import Runtime
from specstack.errors import UserError
from specstack.server import held_serve, identity, ipc, leash, vllm_caches
from specstack.server.identity import Ownership

if TYPE_CHECKING:
    from specstack.config.methods import ServePlan


class ServerError(RuntimeError):
    """The server did not come up or went away."""


@dataclass
class Server:
    base_url: str
    served_model_name: str
    runtime: Runtime
    argv: list[str] | None = None  # what was started (native) or None (url)
    env: dict[str, str] = field(default_factory=dict)
    log_path: Path | None = None
    process: subprocess.Popen | None = field(default=None, repr=False)
    models: list[dict] = field(default_factory=list)  # /v1/models data once ready
    ready_seconds: float | None = None
    identity: str | None = None  # native: why the server answering is the one started (identity.py)
    ipc_dir: Path | None = field(default=None, repr=False)  # native: its IPC sockets, removed when it stops
    held: bool = False  # native: started by prestart_native and not yet told to serve (log_path: what it printed)
    held_seconds: float | None = None  # native, held: how long it imported before it was told to serve
    # native, held: when (epoch seconds) it was started, its imports ended (None: still importing at its release)
    # and it was released; held_seconds and imports_between() are read from them
    held_at: float | None = field(default=None, repr=False)
    imported_at: float | None = field(default=None, repr=False)
    released_at: float | None = field(default=None, repr=False)

    def imports_between(self, start: float, end: float) -> float:
        """The seconds of [start, end] (epoch) during which this server's held process was importing vLLM: 0 for a
        server not started held."""
        if self.held_at is None:
            return 0.0
        done = self.imported_at if self.imported_at is not None else (self.released_at or time.time())
        return max(0.0, min(done, end) - max(self.held_at, start))

    @property
    def root_model(self) -> str | None:
        """The model path/id behind the served name, as /v1/models reports it (used as bench's tokenizer)."""
        for entry in self.models:
            if entry.get("id") == self.served_model_name:
                return entry.get("root")
        return None

    def alive(self) -> bool:
        return self.process is None or self.process.poll() is None

    @property
    def address(self) -> tuple[str, int]:
        host, port = self.base_url.split("://", 1)[-1].rsplit(":", 1)
        return host, int(port)

    def owner(self) -> Ownership:  # `identity` here would name the field below, not the module
        """Whose socket listens on this server's port (native only: the session started is the process's)."""
        assert self.process is not None, "owner() is for a server this run started"
        host, port = self.address
        return identity.port_owner(host, port, self.process.pid, self.log_path)

    def verify(self, when: str) -> None:
        """A native server is measured only while the process this run started is alive and still the one
        listening on its port: checked when it is declared ready and at every window's open and close. The url
        runtime attaches to someone else's server and keeps its own rules (observed.py, --trust-server)."""
        if self.process is None:
            return
        if not self.alive():
            raise ServerError(
                f"the vllm serve this run started (pid {self.process.pid}) exited with code "
                f"{self.process.returncode} {when}; last lines of {self.log_path}:\n{_tail(self.log_path)}"
            )
        own = self.owner()
        if own.status == "foreign":
            host, port = self.address
            raise ForeignServer(identity.foreign_message(host, port, own.holders, self.process.pid) + f" ({when})")


def free_port() -> int:
    """A loopback port nobody listens on now: the OS picks it, or, where SPECSTACK_PORT_RANGE ("20000-22999") is
    set, one of that range (the test suite gives each of its parallel workers its own range below the ephemeral
    ports, so a port one worker picked and will bind seconds later is never the OS's pick for the other)."""
    span = os.environ.get("SPECSTACK_PORT_RANGE")
    if not span:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return s.getsockname()[1]
    low, high = (int(x) for x in span.split("-"))
    for port in random.sample(range(low, high + 1), min(200, high - low + 1)):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) != 0:
                return port
    raise UserError(f"no free loopback port in SPECSTACK_PORT_RANGE={span}; widen it or unset it")


def port_free(host: str, port: int) -> bool:
    """Nothing listens on host:port. A connect that succeeds means in use, whatever bind says (a sandboxed
    network stack once let a second bind succeed beside a listener), and the bind is tried without
    SO_REUSEADDR. A bind refused only for connections of a stopped server left in TIME_WAIT (no listener)
    counts as free: vLLM binds with SO_REUSEADDR (launchers/launcher.py), which they do not block."""
    try:
        with socket.create_connection((host, port), timeout=1.0):
            return False
    except OSError:
        pass
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
        except OSError:
            return not identity.listeners(host, port)
    return True


def port_holders(host: str, port: int) -> list[str]:
    """Who listens on host:port, as "pid N (command line)" (only this user's processes are visible)."""
    return [h.describe() for h in identity.listeners(host, port)]


def port_in_use_message(host: str, port: int) -> str:
    holders = ", ".join(port_holders(host, port)) or "a holder not visible to this user"
    return f"port {host}:{port} is already in use (by {holders}); stop whatever listens there or pass --port"


class ForeignServer(ServerError):
    """Something other than the server this run started listens on its port."""


class PortNotReleased(ServerError):
    """A sweep's next server cannot start: the previous one's port is still taken after the bounded wait."""


def wait_port_free(host: str, port: int, timeout: float, *, after: str = "the server stopped") -> None:
    """Poll until host:port can be bound, at most `timeout` s; then PortNotReleased naming who holds it."""
    deadline = time.monotonic() + timeout
    delay = 0.05
    while not port_free(host, port):
        if time.monotonic() > deadline:
            holders = ", ".join(port_holders(host, port)) or "holder not visible to this user"
            raise PortNotReleased(
                f"port {host}:{port} is still in use {timeout:.0f} s after {after} (held by "
                f"{holders}); refusing to start a second server on it. Stop that process, "
                "then rerun the same command to resume"
            )
        time.sleep(delay)
        delay = min(delay * 2, 1.0)


def vllm_executable() -> str:
    """The `vllm` of this Python environment (same version for serve and bench), else the one on PATH."""
    local = Path(sys.executable).with_name("vllm")
    found = str(local) if local.exists() else shutil.which("vllm")
    if not found:
        raise UserError("no `vllm` executable found; run `make venv` (or install vllm==0.32.0)")
    return found


def _tail(path: Path | None, lines: int = 25) -> str:
    if path is None or not path.exists():
        return ""
    text = path.read_text(errors="replace").splitlines()
    return "\n".join(text[-lines:])


def wait_ready(server: Server, timeout: float) -> Server:
    """Poll /health then /v1/models with short, bounded back-off until the served name is listed."""
    start = time.monotonic()
    deadline = start + timeout
    delay = 0.1
    last_error = "no answer yet"
    with requests.Session() as http:
        while True:
            if not server.alive():
                assert server.process is not None  # alive() says a server without one is
                raise ServerError(
                    f"vLLM exited with code {server.process.returncode} before it was ready; "
                    f"last lines of {server.log_path}:\n{_tail(server.log_path)}"
                )
            try:
                if http.get(f"{server.base_url}/health", timeout=5).status_code == 200:
                    r = http.get(f"{server.base_url}/v1/models", timeout=5)
                    r.raise_for_status()
                    server.models = r.json().get("data", [])
                    if server.process is not None and not _started_server_answers(server):
                        last_error = "an answer on the port, but no sign yet that it is the server started"
                    else:
                        names = [entry.get("id") for entry in server.models]
                        if server.served_model_name not in names:
                            raise UserError(
                                f"the server at {server.base_url} serves {names}, not "
                                f"{server.served_model_name!r}; pass --served-model-name to match"
                            )
                        server.ready_seconds = time.monotonic() - start
                        return server
                else:
                    last_error = "/health not 200 yet"
            except requests.RequestException as e:
                last_error = f"{type(e).__name__}: {e}"
            if time.monotonic() > deadline:
                hint = f"; last lines of {server.log_path}:\n{_tail(server.log_path)}" if server.log_path else ""
                raise ServerError(f"{server.base_url} not ready after {timeout:.0f} s ({last_error}){hint}")
            time.sleep(delay)
            delay = min(delay * 1.5, 1.0)


def _started_server_answers(server: Server) -> bool:
    """Whether what answered is the server this run started: its socket is ours (ForeignServer when it is
    someone else's), or, where no socket is visible, its log says it serves there."""
    own = server.owner()
    if own.status == "foreign":
        host, port = server.address
        assert server.process is not None  # owner() holds it
        raise ForeignServer(
            identity.foreign_message(host, port, own.holders, server.process.pid)
            + " (it answered /health while the server started loaded)"
        )
    server.identity = own.evidence or None
    return own.status == "ours"


def probe(url: str) -> None:
    """Something answers HTTP at url (any status), else a UserError naming the fix. Cheap: run before a
    run's bundle exists, so a wrong --url is refused at once and leaves nothing behind."""
    try:
        requests.get(f"{url.rstrip('/')}/health", timeout=5)
    except requests.RequestException as e:
        raise UserError(
            f"cannot reach a vLLM server at {url.rstrip('/')} ({type(e).__name__}); check --url and "
            "that the server is running"
        ) from None


def attach(url: str, served_model_name: str, timeout: float) -> Server:
    """The `url` runtime: a server someone else started."""
    url = url.rstrip("/")
    probe(url)
    return wait_ready(Server(url, served_model_name, Runtime.URL), timeout)


def native_address(plan: ServePlan) -> tuple[str, int]:
    """The host and port a native server of this plan listens on."""
    return str(plan.flags.get("host", "127.0.0.1")), int(plan.flags.get("port", 8000))


def _native_env(plan: ServePlan, extra_env: dict[str, str] | None) -> tuple[dict[str, str], Path | None]:
    """The server's environment and its IPC folder (None where the user set VLLM_RPC_BASE_PATH)."""
    env = {**os.environ, **plan.env, **(extra_env or {})}
    env.update(vllm_caches.shared_kernel_cache(env))  # one Triton cache for every method (vllm_caches.py)
    # vLLM's ZMQ sockets (engine core <-> API server) are files in VLLM_RPC_BASE_PATH, default the temp folder,
    # that a killed server never removes (742 were left in /tmp by the test suite): a folder of the server's own,
    # removed with it. A user's own VLLM_RPC_BASE_PATH is left as it is.
    ipc_dir = None
    if "VLLM_RPC_BASE_PATH" not in env:
        ipc_dir = ipc.new_folder()
        env["VLLM_RPC_BASE_PATH"] = str(ipc_dir)
    return env, ipc_dir


def _serve_argv(plan: ServePlan) -> list[str]:
    return [vllm_executable(), "serve", *plan.argv]


def _native_server(
    plan: ServePlan, argv: list[str], log_path: Path, ipc_dir: Path | None, *, held: bool = False
) -> Server:
    """The plan's native server running argv (`vllm serve` and its arguments), not started yet."""
    host, port = native_address(plan)
    return Server(
        f"http://{host}:{port}",
        plan.flags["served-model-name"],
        Runtime.NATIVE,
        argv,
        dict(plan.env),
        log_path,
        ipc_dir=ipc_dir,
        held=held,
    )


def _popen_leashed(
    argv: list[str], out: Path, env: dict[str, str], ipc_dir: Path | None, *, stdin: int
) -> subprocess.Popen:
    # Own session: stopping the server's process group also stops its engine core and workers. Through the
    # leash (leash.py): a watchdog in that group kills it, and clears the IPC folder, if this process dies
    # without stopping it (SIGKILL, OOM killer).
    with open(out, "ab") as log:
        return subprocess.Popen(
            leash.command(argv, str(ipc_dir) if ipc_dir else None),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=stdin,
            env=env,
            start_new_session=True,
        )


def prestart_native(plan: ServePlan, extra_env: dict[str, str] | None = None) -> Server | None:
    """A native server's process, held (server/held_serve.py): it imports what `vllm serve` imports and waits to
    be told to serve, so that its imports overlap the harness's pre-flight. No port, GPU or model is touched until
    start_native releases it; cancel_held stops it. None where the `vllm` to run is not this Python's (a `vllm`
    found on PATH: its environment may not hold specstack), which start_native then starts as before."""
    vllm = vllm_executable()
    if Path(vllm) != Path(sys.executable).with_name("vllm"):
        return None
    env, ipc_dir = _native_env(plan, extra_env)
    # what it prints while held: in its IPC folder, which the leash's watchdog removes if this process dies
    if ipc_dir is not None:
        pre_log = str(ipc_dir / "held-server.log")
    else:
        fd, pre_log = tempfile.mkstemp(prefix="specstack-held-", suffix=".log")
        os.close(fd)
    argv = _serve_argv(plan)
    server = _native_server(plan, argv, Path(pre_log), ipc_dir, held=True)
    try:
        held = [sys.executable, "-m", "specstack.server.held_serve", pre_log, *_model_dirs(plan), "--", *argv]
        server.process = _popen_leashed(held, Path(pre_log), env, ipc_dir, stdin=subprocess.PIPE)
        server.held_at = time.time()
    except BaseException:
        cancel_held(server)
        raise
    return server


def _model_dirs(plan: ServePlan) -> list[str]:
    """The models whose classes the server inspects at its start: the target's and a drafter's (held_serve fills
    vLLM's cache of them while held, server/modelinfo_cache.py)."""
    drafter = (plan.speculative_config or {}).get("model")
    return [plan.target, *([drafter] if isinstance(drafter, str) else [])]


def same_plan(server: Server, plan: ServePlan) -> bool:
    """A held server that is still the plan's to release: alive and held, with its argument list and environment."""
    return (
        server.held
        and server.process is not None
        and server.process.poll() is None
        and server.argv == _serve_argv(plan)
        and server.env == dict(plan.env)
    )


def wait_imported(server: Server, timeout: float) -> None:
    """Until a held server's imports are done (held_serve's IMPORTED line in what it printed), it is no longer
    held or alive, or timeout: from then on it only waits, using no CPU."""
    deadline = time.monotonic() + timeout
    while server.held and server.process is not None and server.process.poll() is None:
        try:
            printed = None if server.log_path is None else server.log_path.read_text(errors="replace")
            if printed is None or held_serve.imported_at(printed) is not None:
                return
        except OSError:
            return
        if time.monotonic() >= deadline:
            return
        time.sleep(0.2)


def cancel_held(server: Server) -> None:
    """A held server that will not serve (the pre-flight failed, the run ended before its start): its group
    stopped, its IPC folder and what it printed removed. Nothing for a released one (stop_native's)."""
    if not server.held:
        return
    server.held = False
    process = server.process
    if process is not None and process.stdin is not None:
        with contextlib.suppress(OSError):
            process.stdin.close()  # EOF: a held server that is still importing ends once it reads it
    # SIGKILL for its group; a stop that cannot be confirmed must not hide why the run ended (a listener left on
    # the port is named by the next start's port check)
    with contextlib.suppress(ServerError):
        stop_native(server, timeout=10)
    if server.log_path is not None:
        server.log_path.unlink(missing_ok=True)


def _release(server: Server, log_path: Path) -> None:
    """Tell a held server to serve, its output from now on (and what it printed while held) in log_path."""
    process, pre_log = server.process, server.log_path
    assert process is not None and process.stdin is not None and pre_log is not None
    server.held = False
    server.log_path = log_path
    server.released_at = time.time()
    if server.held_at is not None:
        server.held_seconds = server.released_at - server.held_at
    with contextlib.suppress(OSError):  # what it printed is moved into log_path by the server itself, after "go"
        server.imported_at = held_serve.imported_at(pre_log.read_text(errors="replace"))
    if process.poll() is None:
        try:
            process.stdin.write(f"go {log_path}\n".encode())
            process.stdin.close()
            return
        except OSError:  # it died between the two lines above: wait_ready says so with the log's tail
            pass
    # it died while held (a broken install): its words where the log is read
    if pre_log.exists():
        shutil.copyfile(pre_log, log_path)
        pre_log.unlink(missing_ok=True)


def start_native(
    plan: ServePlan,
    log_path: Path,
    timeout: float,
    extra_env: dict[str, str] | None = None,
    *,
    port_wait: float = 0.0,
    held: Server | None = None,
) -> Server:
    """The `native` runtime: start `vllm serve <plan argv>` as a child process and wait until ready.
    port_wait > 0 (a sweep, after its previous server stopped): wait that long for the port, then fail.
    held: the plan's server from prestart_native (its environment set then), released here instead of starting
    another; its ready_seconds then count from its release (held_seconds: how long it imported before)."""
    host, port = native_address(plan)
    try:
        if port_wait > 0:
            wait_port_free(host, port, port_wait, after="the previous server of this sweep stopped")
        elif not port_free(host, port):
            raise UserError(port_in_use_message(host, port))
    except BaseException:
        if held is not None:
            cancel_held(held)
        raise
    log_path.parent.mkdir(parents=True, exist_ok=True)
    if held is not None:
        server = held
        try:
            _release(server, log_path)
            return wait_ready(server, timeout)
        except BaseException:
            stop_native(server)
            raise
    env, ipc_dir = _native_env(plan, extra_env)
    argv = _serve_argv(plan)
    server = _native_server(plan, argv, log_path, ipc_dir)
    try:
        log_path.write_bytes(b"")
        server.process = _popen_leashed(argv, log_path, env, ipc_dir, stdin=subprocess.DEVNULL)
        return wait_ready(server, timeout)
    except BaseException:
        stop_native(server)
        raise


def _remove_ipc_dir(server: Server) -> None:
    if server.ipc_dir is not None:
        shutil.rmtree(server.ipc_dir, ignore_errors=True)
        server.ipc_dir = None


def stop_native(server: Server, timeout: float = 30.0) -> None:
    """Stop the server's whole process group (engine core included): SIGTERM, SIGKILL after `timeout`; a server
    that never became ready gets SIGKILL at once (vLLM 0.32.0 mid-start ignores SIGTERM for minutes, its engine
    core waiting for a handshake). Then confirm the group is gone and its port free."""
    process = server.process
    if process is None:
        _remove_ipc_dir(server)
        return
    if process.poll() is None:
        first = signal.SIGTERM if server.ready_seconds is not None else signal.SIGKILL
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, first)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)
    with contextlib.suppress(ProcessLookupError):  # children that outlived the parent (engine core) go with the group
        os.killpg(process.pid, signal.SIGKILL)
    _wait_group_gone(process.pid, timeout)
    _remove_ipc_dir(server)
    # Its sockets closed with it. Whatever listens there now is someone else's (a refused foreign server, say):
    # not waited for, and left alone; only a process of this session that left the group would be a leftover.
    host, port = server.address
    left = [h for h in identity.listeners(host, port) if identity.in_session(h.pid, process.pid)]
    if left:
        raise ServerError(
            f"{', '.join(h.describe() for h in left)} of the stopped server still listens on port "
            f"{port}; stop it by pid"
        )


def _wait_group_gone(pgid: int, timeout: float) -> None:
    """SIGKILLed processes take a moment to die; a sweep must not start the next server before they have."""
    deadline = time.monotonic() + timeout
    while members := leash.group_members(pgid):
        if time.monotonic() > deadline:
            raise ServerError(
                f"processes {members} of the stopped server's group are still alive {timeout:.0f} s "
                f"after SIGKILL; check `ps -o pid,stat,cmd -g {pgid}`"
            )
        time.sleep(0.1)
