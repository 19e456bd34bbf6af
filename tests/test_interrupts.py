"""SIGINT, SIGTERM and SIGHUP become one exception in the main thread (specstack/interrupts.py, the one module of
`specstack` and of the compose stack make drives), so every one of them runs the cleanup Ctrl+C runs; a second
signal during that cleanup cannot cut it short."""

from __future__ import annotations

import ast
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from specstack import interrupts
from tests.support import run_main

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("signum", interrupts.SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_each_signal_raises_interrupted_once(signum):
    cleaned = []
    with pytest.raises(interrupts.Interrupted) as e, interrupts.as_exception():
        try:
            os.kill(os.getpid(), signum)
            time.sleep(5)
        finally:
            os.kill(os.getpid(), signum)  # a second signal while cleaning up: ignored
            cleaned.append(True)
    assert cleaned == [True]
    assert e.value.signum == signum and e.value.exit_code == 128 + signum
    assert (
        interrupts.reason(e.value)
        == ("interrupted (Ctrl+C)" if signum == signal.SIGINT else f"interrupted ({signal.Signals(signum).name})")
        + "; rerun the same command to resume"
    )


def test_handlers_are_restored_afterwards():
    before = {s: signal.getsignal(s) for s in interrupts.SIGNALS}
    with interrupts.as_exception():
        assert all(signal.getsignal(s) is not before[s] for s in interrupts.SIGNALS)
    assert {s: signal.getsignal(s) for s in interrupts.SIGNALS} == before


def test_threads_see_the_interruption_and_later_commands_inherit_the_ignore():
    """The compose stack's needs: a slot's thread stops between its steps (check()), and a command the cleanup
    starts (`docker compose down`) ignores a second Ctrl+C to the process group as the harness does."""
    seen = []

    def slot() -> None:
        while not interrupts.interrupted():
            time.sleep(0.01)
        try:
            interrupts.check()
        except interrupts.Interrupted as e:
            seen.append(e.name)

    thread = threading.Thread(target=slot)
    with pytest.raises(interrupts.Interrupted) as e, interrupts.as_exception():
        assert not interrupts.interrupted()
        interrupts.check()  # nothing yet
        thread.start()
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
        finally:
            thread.join(10)
            child = subprocess.run(
                [
                    sys.executable,
                    "-c",
                    "import signal; print([signal.getsignal(s) == signal.SIG_IGN "
                    "for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)])",
                ],
                capture_output=True,
                text=True,
                check=True,
            )
    assert e.value.name == "SIGTERM" and seen == ["SIGTERM"]
    assert child.stdout.strip() == "[True, True, True]", child.stdout


def test_a_span_inside_another_keeps_ignoring_until_the_outer_one_ends():
    """`specstack containers compose ...`: the compose lifecycle's span inside the command line's."""
    before = {s: signal.getsignal(s) for s in interrupts.SIGNALS}
    with interrupts.as_exception():
        with pytest.raises(interrupts.Interrupted), interrupts.as_exception():
            os.kill(os.getpid(), signal.SIGHUP)
            time.sleep(5)
        assert all(signal.getsignal(s) == signal.SIG_IGN for s in interrupts.SIGNALS)
        os.kill(os.getpid(), signal.SIGINT)  # the outer span's cleanup: ignored too
        assert interrupts.interrupted()
    assert {s: signal.getsignal(s) for s in interrupts.SIGNALS} == before
    with interrupts.as_exception():  # the next run starts uninterrupted
        assert not interrupts.interrupted()


def test_the_module_is_python_3_8():
    """host/ imports it, run by make with the host's python3 (3.8 or newer)."""
    ast.parse(Path(interrupts.__file__).read_text(), feature_version=(3, 8))


def test_the_command_line_exits_with_128_plus_the_signal(capsys, monkeypatch):
    def hang_up(args):
        os.kill(os.getpid(), signal.SIGHUP)
        time.sleep(5)

    result = _run_with(capsys, monkeypatch, hang_up)
    assert result.code == 128 + signal.SIGHUP, result.err
    assert "specstack: interrupted (SIGHUP)" in result.err and "Traceback" not in result.err


def _run_with(capsys, monkeypatch, func):
    """`specstack workloads` whose command is `func` (argparse's dispatch, the real main())."""
    import specstack.cli.main as main_module

    real = main_module.build_parser

    def parser():
        p = real()
        p.set_defaults(func=func)
        for action in p._subparsers._group_actions:
            for sub in action.choices.values():
                sub.set_defaults(func=func)
        return p

    monkeypatch.setattr(main_module, "build_parser", parser)
    return run_main(capsys, ["workloads", "--out", "unused"])
