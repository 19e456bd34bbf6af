"""compare/'s tables (compare.json's lists, compare.md's tables) as typed records, in report/rows.py's style: one
TypedDict per table whose fields are that table's columns (compare/contents.py COLUMNS), in the order compare.json
writes them; tests/compare/test_rows.py holds the two equal, and every row a comparison builds to them. A key a row
may leave out is NotRequired. Values are typed `Any` but the keys every table has (method, task: text).
summary_findings (Comparison.findings) stays open-ended on purpose: report/findings.py rows."""

# no `from __future__ import annotations` here: NotRequired must be seen at run time (__required_keys__)
from typing import Any, NotRequired, TypedDict


class FigureRow(TypedDict):
    """A row of the positions and histogram tables, and the start of an acceptance row (acceptance.py _row)."""

    method: str
    label: Any
    task: str
    figure: Any
    position: Any
    a: Any
    b: Any
    delta: Any
    relative: Any
    verdict: Any
    comparable: Any
    flagged: Any
    missing: Any


class AcceptanceRow(FigureRow):
    """A row of the acceptance table: a FigureRow, then the figure over the paired requests
    (acceptance.py RequestInterval)."""

    requests_paired: Any
    ratio: Any
    ratio_low: Any
    ratio_high: Any


class SpeedRow(TypedDict):
    """A row of the speed table (compare/speed.py): one bench figure of a pair at one concurrency."""

    method: str
    label: Any
    task: str
    concurrency: Any
    figure: Any
    higher_is_better: Any
    a: Any
    b: Any
    repeats_a: Any
    repeats_b: Any
    ratio: Any
    ratio_low: Any
    ratio_high: Any
    relative: Any
    verdict: Any
    comparable: Any
    design_a: Any
    design_b: Any
    note: Any


class SpeedupRow(TypedDict):
    """A row of the speedups table (compare/speedups.py): one speedup over the baseline of its own run, A's with
    its confidence and prediction intervals, B's against the latter."""

    method: str
    label: Any
    task: str
    concurrency: Any
    figure: Any
    basis: Any
    a: Any
    a_low: Any
    a_high: Any
    a_predicted_low: Any
    a_predicted_high: Any
    design_a: Any
    b: Any
    b_low: Any
    b_high: Any
    design_b: Any
    verdict: Any
    comparable: Any


class CapacityRow(TypedDict):
    """A row of the capacity table (compare/capacity.py); a pair searched on one side only has no rates."""

    method: str
    label: Any
    task: str
    a: Any
    b: Any
    a_rate: NotRequired[Any]
    a_bound: NotRequired[Any]
    b_rate: NotRequired[Any]
    b_bound: NotRequired[Any]
    ratio: Any
    ratio_low: Any
    ratio_high: Any
    verdict: Any


class OutputRow(TypedDict):
    """A row of the outputs table (compare/outputs.py): one request id of A, or one only B answered."""

    method: str
    task: str
    id: Any
    same: Any
    first_token_divergence: Any
    first_char_divergence: Any
    unit: Any
    finish_reason_a: Any
    finish_reason_b: Any
    note: Any


class OutputSummaryRow(TypedDict):
    """A row of the outputs_summary table (compare/outputs.py); a pair not compared has no median."""

    method: str
    label: Any
    task: str
    requests_a: Any
    requests_b: Any
    compared: Any
    same: Any
    first_divergence_min: Any
    unit: Any
    tokenizer: Any
    verdict: Any
    first_divergence_median: NotRequired[Any]


class GateRow(TypedDict):
    """A row of the gate table (compare/gate.py evaluate): one threshold against one figure."""

    threshold: Any
    figure: Any
    change: Any
    low: Any
    high: Any
    basis: Any
    failed: Any


# table name (compare/contents.py COLUMNS, compare.json's key) -> its row type
ROWS: dict[str, type] = {
    "acceptance": AcceptanceRow,
    "positions": FigureRow,
    "histogram": FigureRow,
    "speed": SpeedRow,
    "speedups": SpeedupRow,
    "capacity": CapacityRow,
    "outputs": OutputRow,
    "outputs_summary": OutputSummaryRow,
    "gate": GateRow,
}
