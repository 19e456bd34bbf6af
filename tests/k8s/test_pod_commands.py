"""The two shell commands the chart's containers run, executed here by bash exactly as rendered (command + args),
with stand-in `vllm` and `specstack` executables on PATH that record their argv: the server's argv arrives intact
(JSON speculative config included) and its output lands in the run's server log; the collector's exit status comes
through, and on an emptyDir it waits until gather leaves .gathered (at most holdSeconds)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from tests.k8s.conftest import of_kind, render

pytestmark = pytest.mark.config

RECORDER = """#!{python}
import json, os, sys
with open(os.environ["ARGV_FILE"], "w") as f:
    json.dump(sys.argv[1:], f)
print("INFO started", flush=True)
print("WARNING on stderr", file=sys.stderr, flush=True)
sys.exit(int(os.environ.get("EXIT_CODE", "0")))
"""


def _containers(method: str) -> dict[str, dict]:
    (job,) = of_kind(render({"methods": [method]}), "Job")
    spec = job["spec"]["template"]["spec"]
    return {c["name"]: c for c in spec["initContainers"] + spec["containers"]}


def _run(container: dict, tmp_path, env: dict, **kw) -> subprocess.Popen:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name in ("vllm", "specstack"):
        exe = bin_dir / name
        exe.write_text(RECORDER.format(python=sys.executable))
        exe.chmod(0o755)
    rendered_env = {e["name"]: e["value"] for e in container["env"]}
    full = {
        **os.environ,
        **rendered_env,
        **env,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "ARGV_FILE": str(tmp_path / f"{container['name']}.argv"),
    }
    return subprocess.Popen(
        [*container["command"], *container["args"]],
        env=full,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kw,
    )


def test_the_server_gets_its_argv_intact_and_its_log_lands_in_the_run(tmp_path):
    vllm = _containers("eagle3")["vllm"]
    log = tmp_path / "results" / "jobs" / "eagle3" / "r" / "host-provenance" / "eagle3.server.log"
    proc = _run(vllm, tmp_path, {"SPECSTACK_SERVER_LOG": str(log)})
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0
    assert json.loads((tmp_path / "vllm.argv").read_text()) == ["serve", *vllm["args"]]
    assert any(a.startswith('{"method":"eagle3"') for a in vllm["args"])
    for _ in range(50):  # tee writes the last line as it exits, just after the server
        if "WARNING on stderr" in log.read_text():
            break
        time.sleep(0.1)
    assert "INFO started" in log.read_text() and "WARNING on stderr" in log.read_text()
    assert "INFO started" in out  # and the container's own log (kubectl logs) keeps it
    assert oct(log.parent.stat().st_mode & 0o777) == "0o777"  # the collector (uid 1000) writes beside it


def test_the_collector_waits_for_gather_then_exits_with_the_runs_status(tmp_path):
    collector = _containers("ngram")["collector"]
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    env = {"SPECSTACK_RUN_DIR": str(run_dir), "SPECSTACK_HOLD_SECONDS": "30", "EXIT_CODE": "1"}
    proc = _run(collector, tmp_path, env)
    time.sleep(1.5)
    assert proc.poll() is None  # holding its emptyDir
    (run_dir / ".gathered").touch()
    out, _ = proc.communicate(timeout=10)
    assert proc.returncode == 1 and "waiting up to 30s for specstack k8s gather" in out
    assert json.loads((tmp_path / "collector.argv").read_text()) == collector["args"]
    started = time.monotonic()
    proc = _run(collector, tmp_path, {**env, "SPECSTACK_HOLD_SECONDS": "0", "EXIT_CODE": "0"})
    out, _ = proc.communicate(timeout=10)
    assert proc.returncode == 0 and "waiting" not in out and time.monotonic() - started < 5
