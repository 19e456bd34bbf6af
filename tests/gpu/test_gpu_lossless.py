"""The lossless test on the GPU: enough samples per prompt that a TV of 0.3 would be found (collected when the run
has a sampled phase, SPECSTACK_GPU_SAMPLES > 0: the tiny set's default)."""

from __future__ import annotations

import pytest

from specstack.config import methods
from tests.gpu.conftest import METHODS, report_table

pytestmark = pytest.mark.gpu

DETECTABLE_TV = 0.3
SPEC_METHODS = [m for m in METHODS if methods.is_speculative(m)]


@pytest.mark.parametrize("method", SPEC_METHODS)
def test_lossless_test_sees_tv_03(gpu_sweep, method):
    """Enough samples that a TV of 0.3 would be found; the verdict itself is recorded, not asserted."""
    rows = [r for r in report_table(gpu_sweep["run_dir"], "lossless") if r["method"] == method]
    assert rows, f"no lossless row for {method}"
    for row in rows:
        assert row["detectable_tv"] and float(row["detectable_tv"]) <= DETECTABLE_TV, row
