"""The cached second start on the GPU (collected when SPECSTACK_GPU_CACHED starts a method again: first, the tiny
set's default, or all)."""

from __future__ import annotations

import pytest

from tests.gpu.conftest import CACHED_METHODS, METHODS, PLATFORM

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("method", CACHED_METHODS)
def test_cached_start_recorded(gpu_sweep, method):
    """A method's second start, every cache warm: its phases are there to compare with the first's."""
    first = gpu_sweep["summaries"][method]["server"]["startup"] if method in METHODS else None
    again = gpu_sweep["cached"][method]["server"]["startup"]
    assert gpu_sweep["cached"][method]["status"] == "ok", gpu_sweep["cached"][method]["error"]
    assert again["total"] is not None
    if first is not None and not PLATFORM.endswith("-eager"):
        assert again["compile_cache"] == "hit"
