"""What is refused before any server starts (runs/checks.py): the small predicates the checks rest on; the checks
themselves run in every method run's tests (tests/runs/test_outcome.py, tests/cli/test_bad_input.py)."""

from __future__ import annotations

import pytest

from specstack.runs import checks
from tests.support import serve_plan

pytestmark = pytest.mark.unit


def test_only_the_synthetic_rejection_sampler_is_synthetic():
    assert checks.synthetic(serve_plan(speculative_config={"rejection_sample_method": "synthetic"}))
    assert not checks.synthetic(serve_plan(speculative_config={"rejection_sample_method": "strict"}))
    assert not checks.synthetic(serve_plan(speculative_config=None))  # plain decoding


def test_importable_says_whether_a_module_can_be_found_without_importing_it():
    assert checks.importable("json") and checks.importable("json.decoder")
    assert not checks.importable("no_such_module_here") and not checks.importable("no_such_package.sub")
