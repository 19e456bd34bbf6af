"""The forked bench client reports its own CPU time as it exits (measure/cpu_share.py cannot read a gone process)."""

import multiprocessing
import time

import pytest

from specstack.measure.bench import _bench_child

pytestmark = pytest.mark.unit


def _busy(_args) -> None:
    end = time.process_time() + 0.3
    while time.process_time() < end:
        pass


def test_the_bench_child_reports_the_cpu_it_used(tmp_path):
    fork = multiprocessing.get_context("fork")
    cpu = fork.Value("d", -1.0, lock=False)
    child = fork.Process(target=_bench_child, args=(_busy, None, tmp_path / "bench.log", cpu))
    child.start()
    child.join(30)
    assert child.exitcode == 0
    assert cpu.value >= 0.3  # its own busy loop at least; the fork's own setup on top
