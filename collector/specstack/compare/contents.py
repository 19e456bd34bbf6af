"""What one comparison holds: the pairs and every row of A against B (computed by the row modules), the gate's
verdicts and the plots. The sections and the JSON read it; build.py fills it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from specstack.compare import gate, pairing
from specstack.compare.acceptance import moved
from specstack.compare.rows import (
    AcceptanceRow,
    CapacityRow,
    FigureRow,
    GateRow,
    OutputRow,
    OutputSummaryRow,
    SpeedRow,
    SpeedupRow,
)
from specstack.report import findings
from specstack.results.reader import RunData

# Declared columns per table, in the order compare.json writes them (compare/rows.py types each row to them;
# tests/compare/test_rows.py holds the two equal). summary_findings is open-ended: report/findings.py rows.
COLUMNS: dict[str, list[str]] = {
    "acceptance": [
        "method",
        "label",
        "task",
        "figure",
        "position",
        "a",
        "b",
        "delta",
        "relative",
        "verdict",
        "comparable",
        "flagged",
        "missing",
        "requests_paired",
        "ratio",
        "ratio_low",
        "ratio_high",
    ],
    "positions": [
        "method",
        "label",
        "task",
        "figure",
        "position",
        "a",
        "b",
        "delta",
        "relative",
        "verdict",
        "comparable",
        "flagged",
        "missing",
    ],
    "histogram": [
        "method",
        "label",
        "task",
        "figure",
        "position",
        "a",
        "b",
        "delta",
        "relative",
        "verdict",
        "comparable",
        "flagged",
        "missing",
    ],
    "speed": [
        "method",
        "label",
        "task",
        "concurrency",
        "figure",
        "higher_is_better",
        "a",
        "b",
        "repeats_a",
        "repeats_b",
        "ratio",
        "ratio_low",
        "ratio_high",
        "relative",
        "verdict",
        "comparable",
        "design_a",
        "design_b",
        "note",
    ],
    "speedups": [
        "method",
        "label",
        "task",
        "concurrency",
        "figure",
        "basis",
        "a",
        "a_low",
        "a_high",
        "a_predicted_low",
        "a_predicted_high",
        "design_a",
        "b",
        "b_low",
        "b_high",
        "design_b",
        "verdict",
        "comparable",
    ],
    "capacity": [
        "method",
        "label",
        "task",
        "a",
        "b",
        "a_rate",
        "a_bound",
        "b_rate",
        "b_bound",
        "ratio",
        "ratio_low",
        "ratio_high",
        "verdict",
    ],
    "outputs": [
        "method",
        "task",
        "id",
        "same",
        "first_token_divergence",
        "first_char_divergence",
        "unit",
        "finish_reason_a",
        "finish_reason_b",
        "note",
    ],
    "outputs_summary": [
        "method",
        "label",
        "task",
        "requests_a",
        "requests_b",
        "compared",
        "same",
        "first_divergence_min",
        "unit",
        "tokenizer",
        "verdict",
        "first_divergence_median",
    ],
    "gate": ["threshold", "figure", "change", "low", "high", "basis", "failed"],
}


@dataclass
class Comparison:
    run_a: RunData
    run_b: RunData
    pairs: list[pairing.Pair]
    unmatched: list[str]
    acceptance: list[AcceptanceRow]
    positions: list[FigureRow]
    histogram: list[FigureRow]
    speed: list[SpeedRow]
    outputs: list[OutputRow]
    outputs_summary: list[OutputSummaryRow]
    thresholds: list[gate.Threshold]
    gate: list[GateRow]
    speedups: list[SpeedupRow] = field(default_factory=list)  # B's speedups against A's intervals (speedups.py)
    capacity: list[CapacityRow] = field(default_factory=list)  # capacity at the SLO, A vs B (compare/capacity.py)
    plots: dict[str, bytes] = field(default_factory=dict)
    plot_captions: dict[str, str] = field(default_factory=dict)

    @property
    def findings(self) -> list[dict[str, Any]]:
        """Each figure a side's summary.json stated otherwise than its sums and records (shown recomputed)."""
        return findings.rows(self.run_a.findings, "A", raw=True) + findings.rows(self.run_b.findings, "B", raw=True)

    @property
    def failed(self) -> bool:
        return any(r["failed"] for r in self.gate)

    def changed(self) -> list[str]:
        """Every comparable figure whose verdict is "changed", in words."""
        out = [
            f"{r['method']} {r['task']} {r['figure']}" + (f" {r['position']}" if r["position"] is not None else "")
            for r in self.acceptance + self.positions + self.histogram
            if moved(r)
        ]
        out += [
            f"{r['method']} {r['task']} c={r['concurrency']} {r['figure']} ({r['verdict']})"
            for r in self.speed
            if r["verdict"].startswith("changed")
        ]
        out += [
            f"{r['method']} {r['task']} capacity at the SLO ({r['verdict']})"
            for r in self.capacity
            if r["verdict"].startswith("changed")
        ]
        out += [
            f"{s['method']} {s['task']} greedy outputs ({s['verdict']})"
            for s in self.outputs_summary
            if s["verdict"].startswith("changed")
        ]
        return out


def run_id(run: RunData) -> str:
    return run.manifest.get("run_id") or run.run_dir.name
