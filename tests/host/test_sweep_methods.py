"""`python3 -m specstack.host sweep-methods [--mtp]` (host/cli.py, host/stack.py): services/methods.toml's [sweep],
the one default list, printed for make (services/compose.mk's SWEEP_METHODS and SWEEP_MTP_METHODS), also on a
python3 without tomllib; a bad table is one line naming the fix, and stops make sweep."""

from __future__ import annotations

import ast
import os
import subprocess
import sys

import pytest

from specstack.config import methods

from .test_cli import COLLECTOR, REPO, _host

pytestmark = pytest.mark.unit

NO_TOMLLIB = (
    "import runpy, sys; sys.modules['tomllib'] = None; sys.argv[0] = 'specstack.host'; "
    "runpy.run_module('specstack.host', run_name='__main__')"
)


def _bad_toml(tmp_path):
    """A copy of the repository's make files and methods.toml whose [sweep] names a method it does not have."""
    (tmp_path / "services").mkdir()
    text = (REPO / "services" / "methods.toml").read_text()
    assert text.count('"suffix"]') == 1
    (tmp_path / "services" / "methods.toml").write_text(text.replace('"suffix"]', '"suffix", "medusa"]'))
    (tmp_path / "services" / "compose.mk").write_text((REPO / "services" / "compose.mk").read_text())
    for name in ("collector", "images"):
        (tmp_path / name).symlink_to(REPO / name)
    return tmp_path / "services" / "methods.toml"


def test_it_prints_the_table_space_separated():
    assert _host("sweep-methods").stdout == " ".join(methods.default_sweep_methods()) + "\n"
    assert _host("sweep-methods", "--mtp").stdout == " ".join(methods.default_mtp_sweep_methods()) + "\n"


@pytest.mark.parametrize("mtp", [[], ["--mtp"]])
def test_without_tomllib_it_prints_the_same(mtp):
    """The host's python3 may be 3.8 (no tomllib): the minimal reader of config/sweep.py reads the table."""
    out = subprocess.run(
        [sys.executable, "-S", "-c", NO_TOMLLIB, "sweep-methods", *mtp],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(COLLECTOR)},
        cwd=REPO,
        timeout=60,
    )
    assert out.returncode == 0 and out.stdout == _host("sweep-methods", *mtp).stdout, out.stderr


@pytest.mark.parametrize("tomllib", [True, False])
def test_a_name_that_is_no_method_is_one_line_naming_the_fix(tmp_path, tomllib):
    toml = _bad_toml(tmp_path)
    args = ["-c", NO_TOMLLIB] if not tomllib else ["-m", "specstack.host"]
    out = subprocess.run(
        [sys.executable, *args, "sweep-methods", "--file", str(toml)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(COLLECTOR)},
        cwd=tmp_path,
        timeout=60,
    )
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr == (
        f"specstack containers: {toml} [sweep] methods names 'medusa', which is no method of {toml} "
        "(no [methods.medusa] table): fix the name or remove it from [sweep]; the methods: "
        f"{', '.join(methods.names())}\n"
    )


@pytest.mark.parametrize("module", ["host/stack.py", "host/cli.py", "config/sweep.py"])
def test_what_it_runs_is_python_3_8(module):
    ast.parse((COLLECTOR / "specstack" / module).read_text(), feature_version=(3, 8))


def _make(*args: str, cwd=REPO) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    return subprocess.run(
        ["make", "--no-print-directory", *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=120
    )


def test_make_sweep_runs_the_table_by_default():
    listed = " ".join(methods.default_sweep_methods() + methods.default_mtp_sweep_methods())
    proc = _make("-n", "sweep", "RUN_ID=r1")
    assert proc.returncode == 0, proc.stderr
    assert f"SWEEP_METHODS='{listed}'" in proc.stdout
    proc = _make("-n", "sweep", "SCHEDULER=slurm", "RUN_ID=r1")
    assert proc.returncode == 0, proc.stderr
    assert f"--methods \"$(echo {listed} | tr ' ' ,)\"" in proc.stdout
    proc = _make("-n", "sweep", "RUN_ID=r1", "SWEEP_METHODS=ngram baseline", "SWEEP_MTP_METHODS=")
    assert "SWEEP_METHODS='ngram baseline '" in proc.stdout
    # only the sweep step gets (and reads) the list
    assert "SWEEP_METHODS" not in _make("-n", "down").stdout


def test_a_bad_table_stops_make_sweep_naming_the_fix(tmp_path):
    _bad_toml(tmp_path)
    (tmp_path / "probe.mk").write_text("include services/compose.mk\n")
    proc = _make("-f", "probe.mk", "-n", "sweep", "RUN_ID=r1", cwd=tmp_path)
    assert proc.returncode == 2 and "docker" not in proc.stdout
    assert "[sweep] methods names 'medusa', which is no method of services/methods.toml" in proc.stderr
    assert (
        "services/methods.toml's [sweep] is refused (the line above says why); fix it, or give SWEEP_METHODS"
        in proc.stderr
    )
    # what needs no sweep list is not stopped by it
    assert _make("-f", "probe.mk", "-n", "down", cwd=tmp_path).returncode == 0
