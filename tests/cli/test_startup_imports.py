"""A command starts without what only a report, a comparison or a method's tables need (#42): pandas and
matplotlib cost about 0.6 s of every `specstack sweep`'s start-up on the CPU host, before its first server could
start. Each command imports them when it uses them; a sweep loads them beside its first server's start
(runs/warm_imports.py)."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.unit

LATER = ("pandas", "matplotlib")


def loaded_after(code: str) -> set[str]:
    """The top-level packages of LATER a fresh interpreter has loaded after running `code`."""
    probe = f"{code}\nimport sys\nprint(' '.join(sorted({{m.split('.')[0] for m in sys.modules}} & {set(LATER)!r})))"
    return set(subprocess.check_output([sys.executable, "-c", probe], text=True).split())


def test_the_command_line_and_its_parser_load_neither_pandas_nor_matplotlib():
    assert loaded_after("from specstack.cli import main\nmain.build_parser()") == set()


def test_the_sweep_loop_and_a_method_run_load_them_only_when_used():
    code = "import specstack.pipeline.sweep, specstack.pipeline.reproduce, specstack.runs.method_run"
    assert loaded_after(code) == set()


def test_the_report_still_loads_them():
    # the other side, so that the two tests above cannot pass on a probe that sees nothing
    assert loaded_after("import specstack.report.build") == set(LATER)
