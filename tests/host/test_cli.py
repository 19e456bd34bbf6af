"""collector/specstack/host/cli.py: the actions as make runs them (`python3 -m specstack.host`, standard library
only) and as `specstack containers`; a HostError is one line and exit code 2."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from specstack.cli import main as specstack_main
from specstack.host import cli

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
COLLECTOR = REPO / "collector"


def _host(*args: str) -> subprocess.CompletedProcess:
    """`python3 -m specstack.host ARGS` the way services/compose.mk runs it (PYTHONPATH=collector)."""
    env = {**os.environ, "PYTHONPATH": str(COLLECTOR)}
    return subprocess.run(
        [sys.executable, "-m", "specstack.host", *args], capture_output=True, text=True, env=env, cwd=REPO, timeout=60
    )


def test_check_lock_command_rejects_floating_tags(tmp_path):
    lock = tmp_path / "images.lock"
    lock.write_text("VLLM_IMAGE=vllm/vllm-openai:latest\n")
    out = _host("check-lock", "--file", str(lock))
    assert out.returncode == 1 and "floats" in out.stderr
    out = _host("check-lock", "--file", str(REPO / "images.lock"))
    assert out.returncode == 0, out.stderr


# The modules of specstack the host helper may import besides its own: standard library only, all of them.
ALLOWED = {
    "specstack",
    "specstack.errors",
    "specstack.results",
    "specstack.results.files",
    "specstack.results.bundle",
    "specstack.results.layout",
    "specstack.results.run_lock",
    "specstack.config",
    "specstack.config.sweep",
    "specstack.interrupts",
    "specstack.pipeline",
    "specstack.pipeline.serial",
    "specstack.pipeline.slots",
}

IMPORT_ALL = """
import json, pkgutil, sys
sys.path.insert(0, sys.argv[1])
import specstack.host
for m in pkgutil.iter_modules(specstack.host.__path__, "specstack.host."):
    if not m.name.endswith("__main__"):
        __import__(m.name)
print(json.dumps(sorted(sys.modules)))
"""


def test_the_host_helper_imports_the_standard_library_only():
    """make runs it with the host's plain python3, before any venv exists: no site-packages (-S), and every
    module it loads is the standard library's or one of the few standard-library-only modules of specstack."""
    out = subprocess.run(
        [sys.executable, "-S", "-c", IMPORT_ALL, str(COLLECTOR)],
        capture_output=True,
        text=True,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    loaded = json.loads(out.stdout)
    assert "specstack.host.cli" in loaded and "specstack.host.engine" in loaded
    foreign = [m for m in loaded if m.split(".")[0] not in {*sys.stdlib_module_names, "__main__", "specstack"}]
    ours = [
        m
        for m in loaded
        if m.split(".")[0] == "specstack"
        and m not in ALLOWED
        and m != "specstack.host"
        and not m.startswith("specstack.host.")
    ]
    assert not foreign and not ours, (foreign, ours)
    assert "docker" not in loaded  # the SDK is imported lazily, only when a client is made


def test_every_module_the_host_helper_loads_is_python_3_8():
    """Its own modules and those it borrows (pipeline/'s loops, interrupts.py, results/...): the host's
    python3 may be 3.8, so none of them may use a later syntax."""
    out = subprocess.run(
        [sys.executable, "-S", "-c", IMPORT_ALL, str(COLLECTOR)],
        capture_output=True,
        text=True,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    ours = [m for m in json.loads(out.stdout) if m.split(".")[0] == "specstack"]
    assert {"specstack.pipeline.serial", "specstack.pipeline.slots"} <= set(ours)
    for m in ours:
        path = COLLECTOR.joinpath(*m.split("."))
        path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
        ast.parse(path.read_text(), filename=str(path), feature_version=(3, 8))


def test_the_module_runs_with_no_site_packages(tmp_path):
    lock = tmp_path / "images.lock"
    lock.write_text("VLLM_IMAGE=vllm/vllm-openai:v0.32.0\n")
    out = subprocess.run(
        [sys.executable, "-S", "-m", "specstack.host", "check-lock", "--file", str(lock)],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(COLLECTOR)},
        cwd=tmp_path,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr


def test_specstack_containers_is_the_same_command(tmp_path, capsys):
    lock = tmp_path / "images.lock"
    lock.write_text("VLLM_IMAGE=vllm/vllm-openai:latest\n")
    assert specstack_main.main(["containers", "check-lock", "--file", str(lock)]) == 1
    assert "not pinned: vllm/vllm-openai:latest: tag 'latest' floats" in capsys.readouterr().err
    out = tmp_path / "targets.json"
    assert (
        specstack_main.main(
            ["containers", "targets", "--out", str(out), "--target", "vllm-ngram:8000", "--label", "method=ngram"]
        )
        == 0
    )
    assert json.loads(out.read_text()) == [{"targets": ["vllm-ngram:8000"], "labels": {"method": "ngram"}}]


def test_a_host_error_is_one_line_and_exit_code_2(tmp_path, capsys):
    lock = tmp_path / "images.lock"
    lock.write_text("vllm=vllm/vllm-openai:v0.32.0\n")
    assert cli.main(["check-lock", "--file", str(lock)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"specstack containers: {lock}:1: expected NAME_IMAGE=reference") and err.count("\n") == 1


def test_targets_needs_a_target_or_clear(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["targets", "--out", "x.json"])
    assert e.value.code == 2 and "one of the arguments --target --clear is required" in capsys.readouterr().err


def test_a_folder_the_user_cannot_write_is_named_with_the_fix(tmp_path, capsys, monkeypatch):
    # root writes anywhere, so the engine-made, root-owned ./results is stood in for by the error it raises
    def denied(out, target, labels):
        raise PermissionError(13, "Permission denied", "results/run-1")

    monkeypatch.setattr(cli, "write_targets", denied)
    assert cli.main(["targets", "--out", str(tmp_path / "t.json"), "--clear"]) == 2
    err = capsys.readouterr().err
    assert (
        err.startswith("specstack containers: cannot write results/run-1: permission denied")
        and "chown" in err
        and err.count("\n") == 1
    )
