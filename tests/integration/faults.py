"""Tools shared by the fault tests: run options, fault hooks on the phase bodies, bundle assertions and a
server the test itself manages (restart, freeze) that runs reach through the `url` runtime."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from specstack.config import methods
from specstack.measure import chat
from specstack.runs.options import Options
from specstack.server import runtime
from specstack.server.runtime import start_native, stop_native
from tests.support import free_port

SMALL = dict(
    tasks=("code",),
    num_prompts=3,
    acceptance_max_tokens=16,
    perf_output_len=16,
    warmup_requests=1,
    skip_bench=True,
    ready_timeout=300.0,
    request_timeout=120.0,
)


def options(models_dir: Path, results: Path, run_id: str, method: str = "baseline", **overrides) -> Options:
    return Options(
        method=method,
        run_id=run_id,
        results_dir=results,
        model_set="tiny",
        platform="cpu-native",
        models_dir=str(models_dir),
        **{**SMALL, **overrides},
    )


def on_acceptance_request(monkeypatch, hook) -> None:
    """Wrap the request phase body: hook(n, http, server, row, timeout) runs for the n-th acceptance request
    (1-based; warm-up requests do not count) and returns what send_chat returns."""
    original = chat.send_chat
    count = {"n": 0}

    def wrapped(http, server, row, timeout, **kwargs):
        send = functools.partial(original, **kwargs)
        if row["id"].startswith("warmup-"):
            return send(http, server, row, timeout)
        count["n"] += 1
        return hook(count["n"], send, http, server, row, timeout)

    monkeypatch.setattr(chat, "send_chat", wrapped)


def windows_by_name(summary: dict) -> dict[str, dict]:
    return {w["name"]: w for w in summary["windows"]}


def negatives(obj, path: str = "") -> list[str]:
    if isinstance(obj, bool):
        return []
    if isinstance(obj, (int, float)):
        return [f"{path}={obj}"] if obj < 0 else []
    if isinstance(obj, dict):
        return [n for k, v in obj.items() for n in negatives(v, f"{path}.{k}")]
    if isinstance(obj, list):
        return [n for i, v in enumerate(obj) for n in negatives(v, f"{path}[{i}]")]
    return []


def manifest(run_dir: Path) -> dict:
    return json.loads((run_dir / "manifest.json").read_text())


def live_group_members(pgid: int) -> list[str]:
    """The group's processes that still run: a zombie (killed, not yet reaped by whoever inherited it) holds no
    memory, GPU or port, and how soon it is reaped is up to that parent (pid 1 here), not to the harness."""
    import psutil

    found = []
    for proc in psutil.process_iter(["pid", "status", "cmdline"]):
        try:
            if os.getpgid(proc.pid) == pgid and proc.info["status"] != psutil.STATUS_ZOMBIE:
                found.append(f"{proc.pid} {' '.join(proc.info['cmdline'] or [])[:80]}")
        except (ProcessLookupError, PermissionError, psutil.Error):
            continue
    return found


def group_gone(pgid: int, within: float = 15.0) -> bool:
    """No live process left in the group (SIGKILLed processes take a moment to be torn down)."""
    deadline = time.monotonic() + within
    while live_group_members(pgid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def assert_failed_bundle(summary: dict, published: Path, run_dir: Path, method: str = "baseline") -> None:
    assert summary["status"] == "failed" and summary["error"], summary["error"]
    assert published.name.startswith(f"{method}.failed-"), published
    assert not (run_dir / method).exists(), "a failed run was published as a good result"
    assert json.loads((published / "summary.json").read_text())["status"] == "failed"
    entry = manifest(run_dir)["methods"][method]
    assert entry["status"] == "failed" and entry["dir"] == published.name and entry["error"] == summary["error"]
    assert not [p.name for p in run_dir.iterdir() if ".staging-" in p.name], "half-written bundle left behind"


def assert_warmup_intact(summary: dict, published: Path) -> None:
    warm = windows_by_name(summary)["warmup"]
    assert warm["status"] == "ok" and warm["reason"] is None, warm
    assert warm["counters"]["counters"], "the warm-up window lost its counter deltas"
    records = [json.loads(line) for line in (published / "warmup.jsonl").read_text().splitlines()]
    assert records and all("error" not in r and r["http_status"] == 200 for r in records)
    assert (published / "snapshots" / "warmup.before.prom").stat().st_size > 0
    assert (published / "snapshots" / "warmup.after.prom").stat().st_size > 0


# --- a server the test manages, reached through the `url` runtime -------------------------------------


class ManagedServer:
    """A tiny server on a fixed port that the test can restart; the `url` runtime attaches to it."""

    def __init__(self, models_dir: Path, workdir: Path, method: str = "baseline", spec_override: dict | None = None):
        self.workdir, self.starts = workdir, 0
        self.plan = methods.build(
            method,
            model_set_name="tiny",
            platform="cpu-native",
            models_dir=str(models_dir),
            extra={"port": free_port()},
            spec_override=spec_override,
        )
        self.server = self._start()

    def _start(self) -> runtime.Server:
        self.starts += 1
        return start_native(self.plan, self.workdir / f"server-{self.starts}.log", 300)

    @property
    def url(self) -> str:
        return self.server.base_url

    def restart(self) -> None:
        stop_native(self.server)
        self.server = self._start()

    def stop(self) -> None:
        stop_native(self.server)


_HOLDER = """
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen()
print("listening", flush=True)
time.sleep(float(sys.argv[2]))
"""


def hold_port(port: int, seconds: float) -> subprocess.Popen:
    """A separate process (own session, like a leftover server) listening on the port for `seconds`."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(port), str(seconds)],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert proc.stdout.readline().strip() == "listening"
    return proc
