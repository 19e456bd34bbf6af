"""The step names `make bench-harness` reads (selfbench/harness_runs.py) are the ones the product emits.

The harness benchmark only listens to the run's events (selfbench/probe.py): a step renamed in the product would
leave its figure at zero and its time in "unattributed" without any error. So the names are tied here to the
product's source: every literal `events.step("...")` call in specstack/runs/method_run.py, native_server.py (its
server's start and stop), checks.py and monitoring.py, found with ast (nothing is run).
"""

from __future__ import annotations

import ast
import inspect

import pytest

from selfbench import harness_runs
from specstack.runs import checks, method_run, monitoring, native_server

pytestmark = pytest.mark.unit


def emitted(source: str) -> set[str]:
    """Names of the literal `events.step("name", ...)` calls in `source`."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "step"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "events"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            names.add(node.args[0].value)
    return names


# checks: before the run; native_server: the server's start and stop
METHOD_RUN = emitted(inspect.getsource(method_run)) | emitted(inspect.getsource(checks))
METHOD_RUN |= emitted(inspect.getsource(native_server))
MONITORING = emitted(inspect.getsource(monitoring))


def test_the_parser_finds_literal_step_calls_only():
    source = (
        'with events.step("a", method=m):\n    pass\nwith events.step(key):\n    pass\n'
        'other.step("b")\nevents.stop("c")\n'
    )
    assert emitted(source) == {"a"}
    assert METHOD_RUN, 'no events.step("...") call found in runs/method_run.py: has the way it emits steps changed?'


def test_every_labelled_step_is_one_the_method_run_emits():
    missing = set(harness_runs.STEP_LABELS) - METHOD_RUN
    assert not missing, (
        f"selfbench's STEP_LABELS name steps runs/method_run.py no longer emits: {sorted(missing)}; "
        f"it emits {sorted(METHOD_RUN)}"
    )
    assert harness_runs.SERVER_START_STEP in METHOD_RUN
    assert harness_runs.FINAL_SCRAPE_STEP in MONITORING


def test_every_step_on_the_method_s_path_has_a_label():
    """A new step of the method run gets its row in the overhead table (or its time would be "unattributed")."""
    unlabelled = METHOD_RUN - set(harness_runs.STEP_LABELS) - {harness_runs.SERVER_START_STEP}
    assert not unlabelled, f"label these steps in selfbench/harness_runs.py STEP_LABELS: {sorted(unlabelled)}"
