"""`specstack probe-sampler`'s plumbing: the exit status follows the verdict, the JSON is written whole, the
summary is printed (the probe itself: test_sampler_probe.py)."""

import json

import pytest

from specstack.cli.main import main
from specstack.probes import sampler

pytestmark = pytest.mark.unit


def _report(verdict):
    return {
        "schema": sampler.SCHEMA,
        "verdict": verdict,
        "seconds": 1.0,
        "cause": None,
        "failing_shapes": [],
        "platform": {"vllm": "0.32.0", "device": "cpu", "triton_kernels": False},
        "statistics": {
            "tests": 3,
            "untested": 0,
            "family_alpha": 1e-3,
            "level": 3e-4,
            "min_power": 0.95,
            "power_against_tv": 0.1,
            "power_against_acceptance_shift": 0.05,
        },
        "shapes": [
            {
                "shape": {"name": "t1.0-k1"},
                "trials": 10,
                "verdict": verdict,
                "cause": [],
                "failures": [] if verdict == "pass" else ["position 0: token distribution off"],
            }
        ],
    }


@pytest.mark.parametrize("verdict, code", [("pass", 0), ("fail", 1)])
def test_exit_status_json_and_summary(tmp_path, monkeypatch, capsys, verdict, code):
    monkeypatch.setattr(sampler, "run_probe", lambda: _report(verdict))
    out = tmp_path / "probe" / "sampler.json"
    assert main(["probe-sampler", "--json", str(out)]) == code
    assert json.loads(out.read_text())["verdict"] == verdict
    printed = capsys.readouterr().out
    assert printed.startswith(f"sampler probe: {verdict.upper()}") and str(out) in printed


def test_json_on_stdout_keeps_the_summary_on_stderr(monkeypatch, capsys):
    monkeypatch.setattr(sampler, "run_probe", lambda: _report("fail"))
    assert main(["probe-sampler", "--json", "-"]) == 1
    captured = capsys.readouterr()
    assert json.loads(captured.out)["verdict"] == "fail" and "FAIL" in captured.err
