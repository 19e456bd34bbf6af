"""A native server held while the pre-flight runs (server/held_serve.py, runtime.prestart_native), on the real engine
(vLLM 0.32.0, CPU, model set tiny): held, its process has done vLLM's imports and started nothing (no port, no
engine core); released, it is the same process serving, its log holding what it printed while held; cancelled,
nothing of it is left. And a run whose pre-flight refuses the plan leaves no held process behind."""

from __future__ import annotations

import time

import psutil
import pytest
import requests

from specstack.config import methods
from specstack.errors import UserError
from specstack.runs import checks
from specstack.runs.options import Options
from specstack.server import held_serve, leash, modelinfo_cache
from specstack.server.runtime import cancel_held, port_free, prestart_native, start_native, stop_native

from ..support import free_port

pytestmark = pytest.mark.integration


def tiny_plan(models_dir, port: int):
    return methods.build(
        "baseline", model_set_name="tiny", platform="cpu-native", models_dir=str(models_dir), extra={"port": port}
    )


def wait_imported(server, seconds: float = 180) -> None:
    deadline = time.monotonic() + seconds
    while held_serve.IMPORTED not in server.log_path.read_text(errors="replace"):
        assert server.process.poll() is None, server.log_path.read_text(errors="replace")
        assert time.monotonic() < deadline, f"vLLM not imported after {seconds:.0f} s"
        time.sleep(0.2)


def assert_completes(server) -> None:
    r = requests.post(
        f"{server.base_url}/v1/completions",
        json={"model": server.served_model_name, "prompt": "def f(x):", "max_tokens": 4},
        timeout=120,
    )
    assert r.status_code == 200, r.text


def group_commands(pgid: int) -> list[str]:
    return [" ".join(psutil.Process(p).cmdline()) for p in leash.group_members(pgid)]


def test_held_it_starts_nothing_fills_the_model_class_cache_and_released_it_serves(models_dir, tmp_path):
    """One server (CI time), on a fresh cache root (a new machine's). Held, its process has done vLLM's imports and
    started nothing; vLLM's model-class inspection, which a fresh root makes vLLM run after the release in a
    subprocess that imports vLLM again, ran beside those imports. Released, the same process serves, its log holding
    what it printed while held, and it read that cache."""
    port = free_port()
    plan = tiny_plan(models_dir, port)
    root = tmp_path / "vllm-cache"
    [arch] = modelinfo_cache.architectures([plan.target])
    server = prestart_native(plan, {"VLLM_CACHE_ROOT": str(root)})
    assert server is not None and server.held
    pre_log, pid = server.log_path, server.process.pid
    try:
        # one Triton cache for every method, in that root (server/vllm_caches.py), as the compose stack's
        held_env = psutil.Process(pid).environ()
        assert held_env["TRITON_CACHE_DIR"] == str(root / "triton"), held_env.get("TRITON_CACHE_DIR")
        wait_imported(server)
        # vLLM imported, and nothing started: the port free, no engine core, only the held process and its watchdog
        # (and, while the model-class inspection runs, its process: modelinfo_cache.py)
        assert port_free("127.0.0.1", port)
        commands = [c for c in group_commands(pid) if "specstack.server.modelinfo_cache" not in c]
        assert len(commands) == 2 and not any("EngineCore" in c for c in commands), commands
        assert any("specstack.server.held_serve" in c and "serve" in c for c in commands), commands
        deadline = time.monotonic() + 240
        while not list((root / "modelinfos").glob(f"*-{arch}.json")):  # written while held, never told to serve
            assert server.held and server.process.poll() is None, server.log_path.read_text(errors="replace")
            assert time.monotonic() < deadline, "no model-class cache after 240 s held"
            time.sleep(0.2)
        [cached] = (root / "modelinfos").glob(f"*-{arch}.json")
        written = cached.stat()
        log = tmp_path / "server.log"
        started = start_native(plan, log, 300, held=server)
        assert started is server and started.process.pid == pid and not server.held  # the same process serves
        assert_completes(server)
        text = log.read_text(errors="replace")
        # what it printed while held comes first, then vLLM's own start (its banner names the version)
        banner = text.index("version 0.32.0")
        assert text.index(held_serve.IMPORTED) < banner, text[:2000]
        assert text.index(f"{modelinfo_cache.FILLED} {arch} in ") < banner, text[:3000]
        assert not pre_log.exists() and server.held_seconds is not None and server.held_seconds > 0
        # when its imports ended, read at the release from what it printed: the time breakdown's held seconds
        assert server.held_at is not None and server.imported_at is not None and server.released_at is not None
        assert server.held_at < server.imported_at <= server.released_at
        during = server.imports_between(server.held_at - 5, server.released_at)
        assert during == pytest.approx(server.imported_at - server.held_at)
        assert server.imports_between(server.imported_at, server.released_at) == 0.0
        # vLLM writes the file anew (atomically: a new inode) after an inspection of its own; it read this one
        assert (written.st_ino, written.st_mtime_ns) == (cached.stat().st_ino, cached.stat().st_mtime_ns)
    finally:
        stop_native(server)
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_cancelled_nothing_of_it_is_left(models_dir):
    server = prestart_native(tiny_plan(models_dir, free_port()))
    assert server is not None
    pid, pre_log, ipc = server.process.pid, server.log_path, server.ipc_dir
    cancel_held(server)  # before its imports are done: SIGKILL for the group, whatever it was doing
    assert leash.group_members(pid) == [] and not pre_log.exists() and (ipc is None or not ipc.exists())
    cancel_held(server)  # again: nothing to do


def test_a_plan_the_preflight_refuses_leaves_no_held_server(models_dir, tmp_path):
    """The pre-flight runs beside the held server; its refusal stops that server before the error reaches the user."""
    opts = Options(
        method="ngram",
        model_set="tiny",
        platform="cpu-native",
        models_dir=str(models_dir),
        results_dir=str(tmp_path / "results"),
        run_id="refused",
        port=free_port(),
        spec_override={"prompt_lookup_minn": 2},  # a key only vLLM's SpeculativeConfig refuses
    )
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    with pytest.raises(UserError, match="prompt_lookup_minn"):
        checks.check(opts)
    left = [
        " ".join(p.cmdline())
        for p in psutil.Process().children(recursive=True)
        if p.pid not in before and "held_serve" in " ".join(p.cmdline())
    ]
    assert left == [], left
