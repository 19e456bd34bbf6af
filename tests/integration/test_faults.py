"""Faults on real vLLM 0.32.0 (CPU, tiny models): each one detected, the phase marked failed with its reason,
earlier results intact, and the stack recovers.

Faults are injected by wrapping the phase bodies (`specstack.phases.send_chat`) or the server start
(`specstack.runtime.wait_ready`); what they do is real: a SIGKILL of the server's process group, a real
server restart, a real client-side read timeout, a real HTTP error from vLLM, an interrupt while a
server is loading. Server starts in this file: 5, plus one aborted 2 s into loading by the injected Ctrl+C.
One server runs at a time: each class owns its servers and stops them before the next class starts.
"""
from __future__ import annotations

import json
import os
import re
import signal
import time
from pathlib import Path

import pytest
import requests

from specstack import methods, phases, runtime
from specstack import run as run_module
from specstack.run import Options, run_method, sweep
from specstack.runtime import port_free, start_native, stop_native

from .prom import free_port

SMALL = dict(tasks=("code",), num_prompts=3, acceptance_max_tokens=16, perf_output_len=16, warmup_requests=1,
             skip_bench=True, ready_timeout=300.0, request_timeout=120.0)


def options(models_dir: Path, results: Path, run_id: str, **overrides) -> Options:
    return Options(method="baseline", run_id=run_id, results_dir=results, model_set="tiny", platform="cpu-native",
                   models_dir=str(models_dir), **{**SMALL, **overrides})


def on_acceptance_request(monkeypatch, hook) -> None:
    """Wrap the request phase body: hook(n, http, server, row, timeout) runs for the n-th acceptance request
    (1-based; warm-up requests do not count) and returns what send_chat returns."""
    original = phases.send_chat
    count = {"n": 0}

    def wrapped(http, server, row, timeout):
        if row["id"].startswith("warmup-"):
            return original(http, server, row, timeout)
        count["n"] += 1
        return hook(count["n"], original, http, server, row, timeout)
    monkeypatch.setattr(phases, "send_chat", wrapped)


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


def group_gone(pgid: int, within: float = 15.0) -> bool:
    """No process left in the group (SIGKILLed processes take a moment to be torn down and reaped)."""
    deadline = time.monotonic() + within
    while True:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)


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
    """A tiny baseline server on a fixed port that the test can restart; the `url` runtime attaches to it."""

    def __init__(self, models_dir: Path, workdir: Path):
        self.workdir, self.starts = workdir, 0
        self.plan = methods.build("baseline", model_set_name="tiny", platform="cpu-native",
                                  models_dir=str(models_dir), extra={"port": free_port()})
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


@pytest.fixture(scope="class")
def managed(models_dir, tmp_path_factory):
    server = ManagedServer(models_dir, tmp_path_factory.mktemp("managed"))
    yield server
    server.stop()


class TestAttachedServer:
    @pytest.mark.parametrize("fault", ["read-timeout", "http-error"])
    def test_a_failing_request_fails_the_window(self, fault, managed, models_dir, tmp_path, monkeypatch):
        """(d) The 2nd acceptance request really times out (server frozen, 1 s read timeout) or really gets an HTTP error
        from vLLM (max_tokens beyond the context): the window fails with the reason, the rest stands."""
        def hook(n, send, http, server, row, timeout):
            if n != 2:
                return send(http, server, row, timeout)
            if fault == "read-timeout":
                # Freeze the API server (SIGSTOP) so the answer surely outlasts a 1 s read timeout, then thaw it.
                os.kill(managed.server.process.pid, signal.SIGSTOP)
                try:
                    return send(http, server, row, (10, 1.0))
                finally:
                    os.kill(managed.server.process.pid, signal.SIGCONT)
            return send(http, server, {**row, "max_tokens": 10 ** 6}, timeout)
        on_acceptance_request(monkeypatch, hook)
        opts = options(models_dir, tmp_path, f"fault-{fault}", runtime="url", url=managed.url)
        summary, published = run_method(opts)

        assert_failed_bundle(summary, published, tmp_path / opts.run_id)
        assert_warmup_intact(summary, published)
        acc = windows_by_name(summary)["acceptance/code"]
        expected = "ReadTimeout" if fault == "read-timeout" else "HTTP 400"
        assert acc["status"] == "failed" and expected in acc["reason"] and "code-001" in acc["reason"], acc["reason"]
        assert summary["error"].startswith("acceptance/code: failed: 1 of 3 requests failed"), summary["error"]
        records = [json.loads(line) for line in (published / "acceptance" / "code.jsonl").read_text().splitlines()]
        assert [("error" in r) for r in records] == [False, True, False]  # the other requests' answers are kept
        assert summary["tasks"]["code"]["requests"] == 3
        assert managed.server.alive() and requests.get(f"{managed.url}/health", timeout=5).ok  # stack recovers

    def test_restart_inside_a_window_makes_it_invalid(self, managed, models_dir, tmp_path, monkeypatch):
        """(b) The server is restarted after the window's before-snapshot: the after-snapshot comes from a
        new process, so the diff is refused (window invalid) instead of reporting negative or mixed counts."""
        old = managed.server.process.pid

        def hook(n, send, http, server, row, timeout):
            if n == 1:
                managed.restart()  # same port, same URL: the collector keeps talking to "the server"
            return send(http, server, row, timeout)
        on_acceptance_request(monkeypatch, hook)
        opts = options(models_dir, tmp_path, "fault-restart", runtime="url", url=managed.url)
        summary, published = run_method(opts)

        assert managed.server.process.pid != old and managed.starts >= 2
        assert_failed_bundle(summary, published, tmp_path / opts.run_id)
        assert_warmup_intact(summary, published)
        acc = windows_by_name(summary)["acceptance/code"]
        assert acc["status"] == "invalid" and "restarted" in acc["reason"], acc
        assert acc["counters"] == {} and acc["from_counters"] is None and acc["checks"] == []
        assert "acceptance/code: invalid:" in summary["error"]
        # The requests themselves succeeded on the new server; only the counter view is unusable.
        assert summary["tasks"]["code"]["requests"] == 3
        assert not negatives(summary), negatives(summary)
        for path in published.rglob("*.json"):
            assert not negatives(json.loads(path.read_text())), (path, negatives(json.loads(path.read_text())))
        before = (published / "snapshots" / "acceptance_code.before.prom").read_text()
        after = (published / "snapshots" / "acceptance_code.after.prom").read_text()
        start = [next(line for line in text.splitlines() if line.startswith("process_start_time_seconds"))
                 for text in (before, after)]
        assert start[0] != start[1], "both snapshots claim the same process"


# --- native runs: a kill mid-acceptance, then an interrupted sweep resumed under the same run id -------

@pytest.fixture(scope="class")
def killed(models_dir, tmp_path_factory):
    """(a) A native baseline run whose server's process group gets SIGKILL before the 2nd acceptance
    request (the 1st was answered)."""
    mp = pytest.MonkeyPatch()
    seen = {}

    def hook(n, send, http, server, row, timeout):
        if n == 2:
            seen["pgid"] = server.process.pid
            os.killpg(server.process.pid, signal.SIGKILL)
            server.process.wait(30)
        return send(http, server, row, timeout)
    on_acceptance_request(mp, hook)
    results = tmp_path_factory.mktemp("native")
    opts = options(models_dir, results, "fault-kill", port=free_port())
    try:
        summary, published = run_method(opts)
    finally:
        mp.undo()
    return {"opts": opts, "summary": summary, "published": published, "pgid": seen.get("pgid")}


class TestNativeRuns:
    def test_kill_mid_acceptance(self, killed):
        summary, published, opts = killed["summary"], killed["published"], killed["opts"]
        run_dir = opts.results_dir / opts.run_id
        assert killed["pgid"] is not None, "the kill was never injected"
        assert_failed_bundle(summary, published, run_dir)
        assert_warmup_intact(summary, published)
        acc = windows_by_name(summary)["acceptance/code"]
        assert acc["status"] == "failed", acc
        assert "2 of 3 requests failed" in acc["reason"] and "ConnectionError" in acc["reason"], acc["reason"]
        assert "/metrics unreachable after" in acc["reason"], acc["reason"]
        assert summary["error"].startswith("acceptance/code: failed:"), summary["error"]
        records = [json.loads(line) for line in (published / "acceptance" / "code.jsonl").read_text().splitlines()]
        assert [("error" in r) for r in records] == [False, True, True]  # the answer before the kill is kept
        assert (published / "server.log").exists()
        assert group_gone(killed["pgid"]), "processes of the killed server's group are still alive"
        assert port_free("127.0.0.1", opts.port), "the killed server's port is still taken"

    def test_kill_reason_says_the_server_died(self, killed):
        """The collector holds the server process: a window that broke because vLLM died must say so
        (exit code / signal), not only show the connection errors the death caused."""
        reason = windows_by_name(killed["summary"])["acceptance/code"]["reason"]
        assert re.search(r"vLLM .*(exited|died|killed)|SIGKILL|signal 9|code -9", reason), reason

    def test_rerun_after_the_kill_then_an_interrupted_sweep_resumes(self, killed, monkeypatch):
        """(a) rerun under the same run id succeeds; (c) Ctrl+C after the first method of a sweep finished
        (while the second's server is loading) keeps the finished one, and a rerun skips it and resumes."""
        opts, run_dir = killed["opts"], killed["opts"].results_dir / killed["opts"].run_id
        failed_before = sorted(p.name for p in run_dir.glob("baseline.failed-*"))
        original_wait = runtime.wait_ready
        loading = {}

        def interrupt_ngram_start(server, timeout):
            if server.argv and "ngram" in " ".join(server.argv):
                loading["pgid"] = server.process.pid
                time.sleep(2)  # the server process is up and importing vLLM when Ctrl+C arrives
                raise KeyboardInterrupt
            return original_wait(server, timeout)
        monkeypatch.setattr(runtime, "wait_ready", interrupt_ngram_start)
        with pytest.raises(KeyboardInterrupt):
            sweep(opts, ["baseline", "ngram"])

        # The baseline rerun (same run id as the killed run) succeeded and is kept; the old failure stays beside it.
        base = json.loads((run_dir / "baseline" / "summary.json").read_text())
        assert base["status"] == "ok" and base["crosscheck"]["ok"], base["error"]
        assert sorted(p.name for p in run_dir.glob("baseline.failed-*")) == failed_before
        assert manifest(run_dir)["methods"]["baseline"]["status"] == "ok"
        # The interrupted method: its loading server is gone, its port free, a failed bundle says why.
        assert loading.get("pgid") and group_gone(loading["pgid"])
        assert port_free("127.0.0.1", opts.port)
        assert not (run_dir / "ngram").exists()
        interrupted = list(run_dir.glob("ngram.failed-*"))
        assert len(interrupted) == 1
        ngram_summary = json.loads((interrupted[0] / "summary.json").read_text())
        assert ngram_summary["status"] == "failed" and "interrupted (Ctrl+C)" in ngram_summary["error"]
        assert manifest(run_dir)["methods"]["ngram"]["status"] == "failed"
        assert not [p.name for p in run_dir.iterdir() if ".staging-" in p.name]

        # Rerun the same sweep: baseline skipped (no server started for it, its files untouched), ngram runs.
        monkeypatch.undo()
        base_bytes = (run_dir / "baseline" / "summary.json").read_bytes()
        started = []
        original_start = run_module.start_native

        def counting_start(plan, *args, **kwargs):
            started.append(plan["method"])
            return original_start(plan, *args, **kwargs)
        monkeypatch.setattr(run_module, "start_native", counting_start)
        results = sweep(opts, ["baseline", "ngram"])
        assert started == ["ngram"]
        assert [s["status"] for s in results] == ["ok", "ok"], [s["error"] for s in results]
        assert (run_dir / "baseline" / "summary.json").read_bytes() == base_bytes
        assert json.loads((run_dir / "ngram" / "summary.json").read_text())["status"] == "ok"
        assert {m: e["status"] for m, e in manifest(run_dir)["methods"].items()} == {"baseline": "ok", "ngram": "ok"}
        assert port_free("127.0.0.1", opts.port)
