"""Fixtures shared by every test folder, the rule that every test declares its kind (a marker of
pyproject.toml: unit, config, integration, compose) so that `pytest -m unit` is exactly the fast set, and how
`make test` splits the suite over parallel workers (pytest-xdist, --dist loadgroup)."""
from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest

from specstack.fixtures import tiny_models

# A parallel worker picks its loopback ports from a range of its own, below the ephemeral ports
# (selfbench/prometheus.py free_port): a port one worker chose for a server that binds it seconds later is never
# what the OS hands the other worker.
if (_worker := os.environ.get("PYTEST_XDIST_WORKER", "")).startswith("gw"):
    _low = 20000 + 3000 * int(_worker[2:])
    os.environ["SPECSTACK_PORT_RANGE"] = f"{_low}-{_low + 2999}"

REPO = Path(__file__).resolve().parents[1]
KINDS = ("unit", "config", "integration", "compose", "gpu")
TESTS = Path(__file__).resolve().parent
# Folders whose tests are of one kind unless a test says otherwise (every file of tests/compose/ declares its own).
UNDECLARED = {"compose": "compose"}


# Session fixtures of tests/integration/conftest.py that several files read (one real sweep of every method...):
# the files that use them run on one worker, so each fixture runs once.
SHARED_SESSION_FIXTURES = {"sweep_run", "self_draft_run", "mt_bench_run"}


def xdist_group(item, shared_files: set[Path]) -> str:
    """The worker group of a test: the compose stack is one chain of fixtures on one Docker engine (images, lock,
    run, down, rerun, sweep, faults), the files sharing a session sweep are one group, and any other file is its
    own group (its module-scoped servers start once)."""
    rel = item.path.relative_to(TESTS)
    if rel.parts[0] == "compose":
        return "compose"
    if item.path in shared_files:
        return "integration-shared"
    return str(rel)


def pytest_collection_modifyitems(config, items):
    shared_files = {item.path for item in items if SHARED_SESSION_FIXTURES & set(getattr(item, "fixturenames", ()))}
    for item in items:
        item.add_marker(pytest.mark.xdist_group(xdist_group(item, shared_files)))
        kinds = {m.name for m in item.iter_markers() if m.name in KINDS}
        default = UNDECLARED.get(item.path.relative_to(TESTS).parts[0])
        if not kinds and default:
            item.add_marker(default)
            continue
        if len(kinds) != 1:
            raise pytest.UsageError(f"{item.nodeid}: declares kinds {sorted(kinds) or 'none'}; give it exactly one "
                                    f"of {', '.join(KINDS)} (pytestmark = pytest.mark.unit, or a decorator)")


@pytest.fixture(scope="session")
def models_dir() -> Path:
    """The tiny local models (built once, stamped; a second build is a no-op)."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    folder = Path(os.environ.get("SPECSTACK_TEST_MODELS", REPO / ".specstack" / "test-models"))
    folder.mkdir(parents=True, exist_ok=True)
    lock = os.open(folder, os.O_RDONLY)
    try:   # parallel workers: one builds, the other waits and then finds the stamps
        fcntl.flock(lock, fcntl.LOCK_EX)
        tiny_models.build_all(folder)
    finally:
        os.close(lock)
    return folder.resolve()
