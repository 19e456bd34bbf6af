"""SIGINT, SIGTERM and SIGHUP become one exception in the main thread (specstack/interrupts.py), so every one of
them runs the cleanup Ctrl+C runs; a second signal during that cleanup cannot cut it short."""
from __future__ import annotations

import os
import signal
import time

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
            os.kill(os.getpid(), signum)   # a second signal while cleaning up: ignored
            cleaned.append(True)
    assert cleaned == [True]
    assert e.value.signum == signum and e.value.exit_code == 128 + signum
    assert interrupts.reason(e.value) == ("interrupted (Ctrl+C)" if signum == signal.SIGINT
                                          else f"interrupted ({signal.Signals(signum).name})") + \
        "; rerun the same command to resume"


def test_handlers_are_restored_afterwards():
    before = {s: signal.getsignal(s) for s in interrupts.SIGNALS}
    with interrupts.as_exception():
        assert all(signal.getsignal(s) is not before[s] for s in interrupts.SIGNALS)
    assert {s: signal.getsignal(s) for s in interrupts.SIGNALS} == before


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
