"""runs/warm_imports.py: a sweep's later imports on a thread of their own, begun as a server starts, joined before
a window; in a fresh interpreter, so that nothing this test process imported before counts."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.unit


def run(code: str) -> str:
    return subprocess.check_output([sys.executable, "-c", code], text=True).strip()


def test_begin_then_settle_leaves_every_module_loaded_on_one_thread():
    out = run(
        "import sys, threading\n"
        "from specstack.runs import warm_imports as w\n"
        "assert not any(m in sys.modules for m in w.MODULES)\n"
        "w.begin(); first = w._thread; w.begin()\n"
        "assert w._thread is first and first.name == 'specstack-warm-imports'\n"
        "w.settle()\n"
        "print(not first.is_alive(), all(m in sys.modules for m in w.MODULES))"
    )
    assert out == "True True"


def test_settle_without_begin_returns_at_once_and_loads_nothing():
    out = run(
        "import sys\n"
        "from specstack.runs import warm_imports as w\n"
        "w.settle()\n"
        "print(w._thread, 'pandas' in sys.modules)"
    )
    assert out == "None False"


def test_a_module_that_fails_to_import_ends_the_thread_quietly():
    out = run(
        "import sys\n"
        "from specstack.runs import warm_imports as w\n"
        "w.MODULES = ('specstack.no_such_module', 'pandas')\n"
        "w.begin(); w.settle()\n"
        "print(w._thread.is_alive(), 'pandas' in sys.modules)"
    )
    assert out == "False False"  # stopped at the first failure: its user raises the error where it needs it
