"""Fixtures shared by every test folder."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from specstack import tiny_models

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def models_dir() -> Path:
    """The tiny local models (built once, stamped; a second build is a no-op)."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    folder = Path(os.environ.get("SPECSTACK_TEST_MODELS", REPO / ".specstack" / "test-models"))
    tiny_models.build_all(folder)
    return folder.resolve()
