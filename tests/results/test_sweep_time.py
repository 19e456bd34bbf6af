"""The manifest's sweep_time record (results/sweep_time.py): written by the sweep loop, read by the time breakdown;
a record that does not hold together is no record."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from specstack.results import sweep_time
from specstack.results.sweep_time import SweepTime

pytestmark = pytest.mark.unit

GOOD = {"process_started": 10.0, "began": 12.0, "methods_ended": 110.0, "methods": ["baseline"], "methods_s": 90.0}


def test_a_record_reads_back_with_its_start_up_and_its_time_outside_the_methods():
    record = SweepTime.from_manifest({"sweep_time": GOOD})
    assert record is not None and record.to_json() == GOOD
    assert (record.wall_s, record.startup_s, record.outside_s) == (100.0, 2.0, 10.0)


@pytest.mark.parametrize(
    "raw",
    [
        None,
        [],
        {k: v for k, v in GOOD.items() if k != "methods_s"},
        {**GOOD, "began": "soon"},
        {**GOOD, "began": 9.0},  # before the process started
        {**GOOD, "methods_ended": 11.0},  # before the loop began
        {**GOOD, "methods_s": 101.0},  # more than the wall time
        {**GOOD, "methods_s": -1.0},
    ],
)
def test_a_record_that_does_not_hold_together_is_none(raw):
    assert SweepTime.from_manifest({} if raw is None else {"sweep_time": raw}) is None


def test_the_command_s_process_start_counts_for_its_first_sweep_only(tmp_path, monkeypatch):
    monkeypatch.setattr(sweep_time, "_command_process", False)
    ran = [("baseline", {"timings": {"checks": 1.5, "total": 20.0}}), ("ngram", {"timings": {"total": 10.0}})]
    began = time.time()
    # run in-process by a caller that is not the command (a test): no start-up, the loop's start is the sweep's
    sweep_time.record(tmp_path, began=began, methods_ended=began + 40.0, ran=ran)
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    record = SweepTime.from_manifest(manifest)
    assert record is not None and record.process_started == began and record.startup_s == 0.0
    assert record.methods == ("baseline", "ngram") and record.methods_s == 31.5 and record.outside_s == 8.5
    # the console script's entry marks its process: its first sweep starts with it, a second one with its loop
    sweep_time.command_started()
    firsts = []
    for _ in range(2):
        sweep_time.record(tmp_path, began=began, methods_ended=began + 40.0, ran=ran)
        record = SweepTime.from_manifest(json.loads((tmp_path / "manifest.json").read_text()))
        assert record is not None
        firsts.append(record.process_started)
    assert firsts[0] == pytest.approx(sweep_time.process_start(), abs=0.01) and firsts[0] < began
    assert firsts[1] == began


def test_the_process_start_is_the_kernel_s_to_its_tick_not_a_whole_second_early():
    """A fresh interpreter's first statement runs a few ms after its process began; psutil's create_time() reads
    up to a second earlier (/proc/stat's boot time is whole seconds: 0.86 s on the CPU host of 2026-12-07)."""
    child = (
        "import time; first = time.time()\n"
        "from specstack.results.sweep_time import process_start\n"
        "import psutil\n"
        "print(first, process_start(), psutil.Process().create_time())"
    )
    first, start, by_psutil = map(float, subprocess.check_output([sys.executable, "-c", child], text=True).split())
    assert 0.0 <= first - start < 0.3  # the interpreter's own start-up, 20-60 ms here
    assert -0.02 <= start - by_psutil < 1.0  # psutil: the same tick count on a boot time cut to the second


def test_the_console_script_marks_its_process_before_the_command_runs(monkeypatch):
    """cli/main.py entry(): the command's process start is its first sweep's (the interpreter and the imports)."""
    from specstack.cli import main as cli

    monkeypatch.setattr(sweep_time, "_command_process", False)
    seen = []
    monkeypatch.setattr(cli, "main", lambda: seen.append(sweep_time._command_process) or 0)
    monkeypatch.delitem(sys.modules, "triton", raising=False)  # else entry() ends this process with os._exit
    with pytest.raises(SystemExit) as ended:
        cli.entry()
    assert ended.value.code == 0 and seen == [True]
