"""The comparison tests' run A (a baseline and ngram, tests/bundles.py make_run)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bundles import make_run


@pytest.fixture
def run_a(tmp_path) -> Path:
    return make_run(tmp_path, "run-a")
