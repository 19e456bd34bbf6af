"""A results folder that cannot be written, provoked for real on file systems mounted by the test (root): a disk
that fills up while a method's bundle is written (a 1 MiB tmpfs; RLIMIT_FSIZE would give EFBIG, not ENOSPC) and a
run folder remounted read-only. Each is one line naming the fix, no traceback, and no staging folder left.

The runs attach (url runtime) to a real HTTP server answering vLLM's endpoints whose /metrics page is large (each
window keeps two snapshots of it), so the disk fills up in the middle of the run."""

from __future__ import annotations

import contextlib
import json
import subprocess
from pathlib import Path

import pytest

from specstack.results import layout
from specstack.server.provenance import HelpHash
from tests.runs.test_attach import FakeEndpoints
from tests.server.test_observed import vllm_page
from tests.support import run_main

pytestmark = pytest.mark.unit


@contextlib.contextmanager
def mounted(target: Path, *how: str):
    """`mount how... target` for the block; unmounted after it whatever happened."""
    target.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", *how, str(target)], check=True, capture_output=True, text=True)
    try:
        yield target
    finally:
        subprocess.run(["umount", "-l", str(target)], check=True)


class BigMetrics(FakeEndpoints):
    """A plain-decode server whose /metrics page carries ~300 KB of comment lines (a busy server's page size)."""

    def __init__(self):
        super().__init__(None)
        page = vllm_page(None) + "".join(f"# padding line {i:06d} {'x' * 60}\n" for i in range(4000))
        handler = self.http.RequestHandlerClass  # this server's own class (FakeEndpoints makes one per server)
        get = handler.do_GET

        def do_get(h):
            if h.path != "/metrics":
                return get(h)
            h.send_response(200)
            h.end_headers()
            h.wfile.write(page.encode())

        handler.do_GET = do_get


def argv(results: Path, url: str) -> list:
    return [
        "run",
        "--method",
        "baseline",
        "--results",
        results,
        "--run-id",
        "r",
        "--url",
        url,
        "--model-set",
        "tiny",
        "--platform",
        "cpu-native",
        "--tasks",
        "code",
        "--num-prompts",
        "2",
        "--acceptance-max-tokens",
        "8",
        "--warmup-requests",
        "1",
        "--skip-bench",
        "--ready-timeout",
        "10",
    ]


def test_a_disk_that_fills_up_while_the_bundle_is_written(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(HelpHash, "result", lambda self, timeout=120: self.cancel() or {"sha256": None})
    server = BigMetrics()
    try:
        with mounted(tmp_path / "small", "-t", "tmpfs", "-o", "size=1m", "tmpfs") as results:
            result = run_main(capsys, argv(results, server.url))
            run_dir = results / "r"
            left = sorted(p.name for p in run_dir.iterdir())
            manifest = json.loads((run_dir / layout.MANIFEST).read_text())
    finally:
        server.close()
    assert result.code == 1 and "Traceback" not in result.err, result.err
    (line,) = [x for x in result.err.splitlines() if x.startswith("specstack: error:")]
    assert (
        f"baseline failed writing its bundle: the disk holding {run_dir} is full (No space left on device); "
        "free space there, or pass --results DIR on a disk with room, then rerun the same command" in line
    ), line
    assert not [n for n in left if layout.STAGING_MARK in n], f"a staging folder was left: {left}"
    assert "baseline" not in left and (manifest.get("methods") or {}).get("baseline", {}).get("status") != "ok"


def test_a_run_folder_made_read_only_is_refused_naming_the_fix(tmp_path, monkeypatch, capsys):
    """An earlier run left results/r; it is now on a read-only mount: refused before anything starts (exit 2)."""
    monkeypatch.setattr(HelpHash, "result", lambda self, timeout=120: self.cancel() or {"sha256": None})
    run_dir = tmp_path / "results" / "r"
    run_dir.mkdir(parents=True)
    (run_dir / layout.MANIFEST).write_text(json.dumps({"schema": "specstack.manifest/1", "methods": {}}))
    server = FakeEndpoints(None)
    try:
        with mounted(run_dir, "--bind", str(run_dir)):
            subprocess.run(["mount", "-o", "remount,bind,ro", str(run_dir)], check=True)
            results = {
                command: run_main(
                    capsys,
                    argv(tmp_path / "results", server.url)
                    if command == "run"
                    else ["sweep", "--methods", *argv(tmp_path / "results", server.url)[2:]],
                )
                for command in ("run", "sweep")
            }
    finally:
        server.close()
    for command, result in results.items():
        assert result.code == 2 and "Traceback" not in result.err, (command, result.err)
        assert (
            f"specstack: error: results folder {run_dir} is not writable (Read-only file system); pass "
            "--results DIR pointing at a writable folder" in " ".join(result.err.split())
        ), (command, result.err)
    assert server.posts == 0
    assert sorted(p.name for p in run_dir.iterdir()) == [layout.MANIFEST]
