"""Fixtures of the GPU-form tests: compose.yaml as written and as rendered with the lock file, and a stand-in
stack (a copy of the stack's files with a fake docker and nvidia-smi first on PATH)."""

from __future__ import annotations

import pytest
import yaml

from .render import COMPOSE, interpolate, lock_env
from .stand_in import make_stack


@pytest.fixture(scope="module")
def raw() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


@pytest.fixture(scope="module")
def resolved(raw) -> dict:
    """compose.yaml as compose sees it with `--env-file images.lock` and nothing else set."""
    return interpolate(raw, lock_env())


@pytest.fixture()
def fake_stack(tmp_path):
    """A copy of the stack's files, a fake docker + nvidia-smi first on PATH, and a fake HF cache."""
    return make_stack(tmp_path)
