"""The console script's exit: once vLLM's import has loaded triton, interpreter teardown prints hundreds of
"nanobind: leaked …" lines after the result; `entry()` flushes and skips that teardown so a user sees the
table last. Real subprocesses: an atexit hook stands in for the teardown that would print."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.unit

SCRIPT = """
import atexit, sys, types
if {triton}:
    sys.modules["triton"] = types.ModuleType("triton")   # what importing vLLM leaves behind
atexit.register(lambda: print("TEARDOWN RAN", file=sys.stderr))
sys.argv = ["specstack", *{argv!r}]
from specstack.cli.main import entry
entry()
"""


def run(triton: bool, argv: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", SCRIPT.format(triton=triton, argv=argv)], capture_output=True, text=True, timeout=120
    )


def test_with_triton_loaded_the_result_is_flushed_and_teardown_skipped():
    p = run(True, ["datasets"])
    assert p.returncode == 0 and "mt-bench" in p.stdout  # everything printed reached the pipe
    assert "TEARDOWN RAN" not in p.stderr


def test_the_exit_status_survives_the_skipped_teardown():
    p = run(True, ["run", "--method", "no-such-method"])
    assert p.returncode == 2 and "no-such-method" in p.stderr and "TEARDOWN RAN" not in p.stderr


def test_without_triton_the_interpreter_exits_normally():
    p = run(False, ["datasets"])
    assert p.returncode == 0 and "TEARDOWN RAN" in p.stderr
