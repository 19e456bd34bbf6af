"""Faults on real vLLM 0.32.0 (CPU, tiny models): each one detected, the phase marked failed with its reason,
earlier results intact, and the stack recovers.

Faults are injected by wrapping the phase bodies (`specstack.measure.chat.send_chat`) or the server start
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

import pytest
import requests

from specstack.pipeline.sweep import sweep
from specstack.runs import native_server as run_module
from specstack.runs.method_run import run_method
from specstack.server import runtime
from specstack.server.runtime import port_free
from tests.support import free_port

from .faults import (
    ManagedServer,
    assert_failed_bundle,
    assert_warmup_intact,
    group_gone,
    manifest,
    negatives,
    on_acceptance_request,
    options,
    windows_by_name,
)

pytestmark = pytest.mark.integration


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
            return send(http, server, {**row, "max_tokens": 10**6}, timeout)

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
        start = [
            next(line for line in text.splitlines() if line.startswith("process_start_time_seconds"))
            for text in (before, after)
        ]
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
            started.append(plan.method)
            return original_start(plan, *args, **kwargs)

        monkeypatch.setattr(run_module, "start_native", counting_start)
        results = sweep(opts, ["baseline", "ngram"])
        assert started == ["ngram"]
        assert [s["status"] for s in results] == ["ok", "ok"], [s["error"] for s in results]
        assert (run_dir / "baseline" / "summary.json").read_bytes() == base_bytes
        assert json.loads((run_dir / "ngram" / "summary.json").read_text())["status"] == "ok"
        assert {m: e["status"] for m, e in manifest(run_dir)["methods"].items()} == {"baseline": "ok", "ngram": "ok"}
        assert port_free("127.0.0.1", opts.port)
