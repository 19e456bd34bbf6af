"""The live progress display: driven by the events a run emits, shown only on a terminal."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from specstack import events
from specstack.cli import progress
from specstack.measure import bench

pytestmark = pytest.mark.unit


def terminal() -> Console:
    return Console(file=io.StringIO(), force_terminal=True, width=160, color_system=None)


def screen(display: progress.LiveProgress) -> str:
    """What the two rows show now."""
    console = Console(file=io.StringIO(), width=160, color_system=None)
    console.print(display.progress.make_tasks_table(display.progress.tasks))
    return console.file.getvalue()


def test_rows_follow_a_sweep_from_server_start_to_the_last_window():
    console = terminal()
    with progress.live(console) as display:
        assert display is not None
        events.emit("sweep.start", methods=["baseline", "ngram", "suffix"])
        events.emit("method.start", method="baseline", index=1, total=3)
        events.emit("server.start", method="baseline", runtime="native")
        shown = screen(display)
        assert "method 1/3: baseline" in shown and "baseline: loading server" in shown
        assert "time left: estimating" in shown
        events.emit("server.ready", method="baseline", seconds=31.2)
        events.emit("window.start", name="acceptance/code", phase="acceptance", total=16)
        for done in range(1, 13):
            events.emit("window.progress", done=done, total=16)
        shown = screen(display)
        assert "baseline: acceptance/code" in shown and "12/16" in shown
        events.emit("window.end", name="acceptance/code", status="ok")
        events.emit("method.end", method="baseline", status="ok", seconds=90.0)
        events.emit("method.start", method="ngram", index=2, total=3)
        shown = screen(display)
        assert "method 2/3: ngram" in shown and "1/3" in shown
        assert "left" in shown and "estimating" not in shown
    assert not events.listening_now()  # the display detached when the block ended


def test_estimate_uses_the_mean_method_and_credits_the_running_one():
    est = progress.Estimate()
    assert est.seconds_left(100.0) is None
    est.durations = [60.0, 120.0]  # mean 90 s
    est.remaining_after_current = 2
    est.current_started = 100.0
    assert est.seconds_left(130.0) == 60.0 + 180.0
    assert est.seconds_left(300.0) == 180.0  # the running one is over the mean: nothing more counted for it


def test_no_live_display_when_output_is_not_a_terminal():
    console = Console(file=io.StringIO())
    with progress.live(console) as display:
        assert display is None
        assert not events.listening_now()
        events.emit("method.start", method="baseline", index=1, total=1)
    assert console.file.getvalue() == ""


def test_a_failing_listener_is_detached_not_raised(capsys):
    def broken(event, fields):
        raise ValueError("boom")

    events.subscribe(broken)
    events.emit("sweep.end")
    assert not events.listening_now()
    assert "detached" in capsys.readouterr().err


def test_bench_progress_is_read_from_its_own_progress_bar(tmp_path):
    log = tmp_path / "cell.log"
    log.write_bytes(
        b"Starting main benchmark run...\n"
        b"\r  0%|          | 0/16 [00:00<?, ?it/s]\r 50%|\xe2\x96\x88\xe2\x96\x88     | 8/16 [00:02<00:02,"
        b"  3.20it/s]\r 62%|\xe2\x96\x88\xe2\x96\x88\xe2\x96\x88    | 10/16 [00:03<00:01,  3.30it/s]"
    )
    assert bench.bench_requests_done(log) == 10
    assert bench.bench_requests_done(tmp_path / "absent.log") is None
    log.write_text("no bar yet\n")
    assert bench.bench_requests_done(log) is None
