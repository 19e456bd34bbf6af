"""Issue 29 point 5 (and 41 point 8: named for what they are): a cross-check count names its per-request identities and shows the trivial ones apart
(constructed windows whose kinds are known)."""

from __future__ import annotations

import pytest
from rich.console import Console

from specstack.measure.accounting import Acceptance, crosscheck_bench, crosscheck_bench_answers, crosscheck_requests
from specstack.report import console_table, crosscheck

pytestmark = pytest.mark.unit


def _acc(steps, drafts, accepted, per_pos) -> Acceptance:
    return Acceptance(
        steps=steps, draft_tokens=drafts, accepted=accepted, per_position=per_pos, histogram=[0] * (len(per_pos) + 1)
    )


def _window(name: str, phase: str, checks) -> dict:
    return {"name": name, "phase": phase, "checks": [c.to_dict() for c in checks]}


def test_each_check_is_counted_in_its_kind():
    acc = _acc(10, 40, 12, [8, 4, 0, 0])  # positions 2 and 3 never accepted: two 0 = 0 identities
    idle = _acc(2, 8, 0, [0, 0, 0, 0])  # the warm-up accepted nothing
    bench = {
        "completed": 4,
        "total_output_tokens": 256,
        "spec_decode_num_drafts": 10,
        "spec_decode_draft_tokens": 40,
        "spec_decode_accepted_tokens": 12,
        "spec_decode_per_position_acceptance_rates": [0.8, 0.4, 0.0, 0.0],
    }
    summary = {
        "windows": [
            _window("warmup", "warmup", crosscheck_requests(idle, idle)),
            _window("acceptance/code", "acceptance", crosscheck_requests(acc, acc)),
            _window(
                "bench/code-c1-r0", "bench", crosscheck_bench_answers(bench, 4, 256, 64) + crosscheck_bench(bench, acc)
            ),
        ],
        "crosscheck": {"ok": True, "checks": 27},
    }
    by = crosscheck.counts(summary)
    # warm-up: 3 sums + 4 positions + 1 internal, of which only steps and drafts are not 0 = 0; acceptance: 3 sums
    # + 4 positions (2 of them 0 = 0) + 1 internal; bench: 3 completeness, 3 + 4 rates from bench's own /metrics
    # reading (2 of the rates 0 = 0)
    assert by == {
        crosscheck.PER_REQUEST: 5,
        crosscheck.COMPLETENESS: 3,
        crosscheck.SAME_COUNTERS: 5,
        crosscheck.INTERNAL: 1,
        crosscheck.TRIVIAL: 10,
        crosscheck.WARMUP: 2,
    }
    assert sum(by.values()) == sum(len(w["checks"]) for w in summary["windows"])
    assert crosscheck.label(summary) == (
        "5 per-request vs counters (+ 3 completeness, 5 same counters, 1 /metrics internal, "
        "10 trivial (0 = 0), 2 warm-up)"
    )


def test_a_baseline_says_completeness_only_and_the_console_ticks_it():
    bench = {"completed": 4, "total_output_tokens": 256}
    base = {
        "method": "baseline",
        "status": "ok",
        "baseline_method": None,
        "tasks": {"code": {"bench": []}},
        "windows": [_window("bench/code-c1-r0", "bench", crosscheck_bench_answers(bench, 4, 256, 64))],
        "crosscheck": {"ok": True, "checks": 3, "mismatches": []},
    }
    assert crosscheck.label(base) == "3 completeness; no per-request identity"
    out = Console(record=True, width=250)
    out.print(console_table.task_table({"baseline": base}, "code"))
    row = next(line for line in out.export_text().splitlines() if line.strip("│ ").startswith("baseline"))
    assert row.split("│")[5].strip() == "✔"  # the cross-check cell; its kinds are the report's (label above)
