"""A method's per-task figures from its windows: the greedy acceptance phase and each sampled phase."""

from __future__ import annotations

import pytest

from specstack.runs.method_summary import _sampled, sampled_file, sampled_window

pytestmark = pytest.mark.unit


def _window(name, accepted, status="ok"):
    return {
        "name": name,
        "phase": "sampled",
        "task": "code",
        "status": status,
        "from_responses": {
            "acceptance_rate": accepted / 8,
            "mean_acceptance_length": 1 + accepted / 2,
            "histogram": [0, 1, 1],
            "steps": 2,
            "draft_tokens": 8,
            "accepted": accepted,
        },
    }


def test_each_temperature_reads_its_own_window():
    windows = [
        _window("acceptance/code", 6),
        _window(sampled_window("code", 0.6), 4),
        _window(sampled_window("code", 1.0), 2, status="failed"),
        _window(sampled_window("chat", 1.0), 8),
    ]
    out = _sampled(windows, "code", (0.6, 1.0))
    assert list(out) == ["0.6", "1"]
    assert (out["0.6"].num_accepted_draft_tokens, out["0.6"].acceptance_rate, out["0.6"].temperature) == (4, 0.5, 0.6)
    assert out["1"].status == "failed" and out["1"].num_accepted_draft_tokens == 2
    assert _sampled(windows, "code", ()) == {}
    assert (sampled_window("code", 1.0), sampled_file("code", 0.6)) == ("sampled/code/t1", "sampled/code-t0.6.jsonl")
