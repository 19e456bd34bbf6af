"""Fixtures shared by every test folder, and the rule that every test declares its kind (a marker of
pyproject.toml: unit, config, integration, compose) so that `pytest -m unit` is exactly the fast set."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from specstack.fixtures import tiny_models

REPO = Path(__file__).resolve().parents[1]
KINDS = ("unit", "config", "integration", "compose", "gpu")
TESTS = Path(__file__).resolve().parent
# Folders whose tests are of one kind unless a test says otherwise (every file of tests/compose/ declares its own).
UNDECLARED = {"compose": "compose"}


def pytest_collection_modifyitems(config, items):
    for item in items:
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
    tiny_models.build_all(folder)
    return folder.resolve()
