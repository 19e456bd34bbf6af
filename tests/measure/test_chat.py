"""run_requests' submission: answers come back in row order, with a bounded number of rows in flight
(so 1,000s of acceptance requests do not each hold a pending future)."""
from __future__ import annotations

import random
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from specstack.measure.chat import _in_order

pytestmark = pytest.mark.unit


def test_in_order_keeps_row_order_and_bounds_what_is_in_flight():
    outstanding = {"now": 0, "max": 0}

    class CountingPool(ThreadPoolExecutor):
        def submit(self, fn, *args):
            outstanding["now"] += 1
            outstanding["max"] = max(outstanding["max"], outstanding["now"])
            return super().submit(fn, *args)

    def slow_square(x):
        time.sleep(random.uniform(0, 0.002))  # finish out of order
        return x * x

    got = []
    with CountingPool(max_workers=4) as pool:
        for value in _in_order(pool, slow_square, list(range(200)), ahead=8):
            outstanding["now"] -= 1
            got.append(value)
    assert got == [x * x for x in range(200)]
    assert outstanding["max"] == 8
