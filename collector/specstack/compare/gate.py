"""`--fail-on METRIC:±X%[,...]`: the exit status a CI job reads. A gate fails when a comparable figure of the
metric moved beyond X % (B against A) in the threshold's direction:

- X < 0: fails when the figure fell by more than |X| %; X > 0: when it rose by more than X %. Without a sign,
  the direction that is worse for the metric (a drop for acceptance and throughput, a rise for latencies).
- Acceptance-phase figures (exact sums): the comparison table's own verdict (compare/acceptance.py `decide`, on
  the figures recomputed from the bundle's records) must be "changed", and the point change beyond X %; a figure
  missing from a side's summary.json that cannot be recomputed fails the gate (nothing was checked).
- Bench figures: the 95 % interval of B/A must lie entirely beyond the threshold, so noise alone does not
  fail a job; a cell without an interval (under MIN_REPEATS repeats a side) is decided by its point change,
  and says "point only".
- A gate that found no comparable figure of its metric fails too: it checked nothing (e.g. other inputs).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from specstack.compare.acceptance import moved
from specstack.compare.rows import GateRow
from specstack.compare.speed import FIGURES as SPEED_FIGURES
from specstack.errors import UserError

# metric -> higher is better
ACCEPTANCE_METRICS = {"acceptance_rate": True, "acceptance_length": True, "per_position": True}
METRICS = {**ACCEPTANCE_METRICS, **{name: higher for name, (_, higher) in SPEED_FIGURES.items()}}
_SPEC = re.compile(r"^\s*([a-z0-9_]+)\s*:\s*([+-]?)(\d+(?:\.\d+)?)\s*%\s*$")


@dataclass(frozen=True)
class Threshold:
    metric: str
    percent: float  # signed: < 0 fails on a drop beyond it, > 0 on a rise beyond it

    @property
    def text(self) -> str:
        return f"{self.metric}:{self.percent:+g}%"


def parse(spec: str | None) -> list[Threshold]:
    """`acceptance_length:-2%,tpot_p50:+5%` -> thresholds; a user error names the fix."""
    out = []
    for part in (spec or "").split(","):
        if not part.strip():
            continue
        m = _SPEC.match(part)
        if not m:
            raise UserError(
                f"--fail-on {part.strip()!r} is not METRIC:±X% (e.g. acceptance_length:-2%); "
                f"metrics: {', '.join(METRICS)}"
            )
        name, sign, value = m.group(1), m.group(2), float(m.group(3))
        if name not in METRICS:
            raise UserError(f"--fail-on: unknown metric {name!r}; use one of {', '.join(METRICS)}")
        if value == 0:
            raise UserError(
                f"--fail-on {part.strip()!r}: a threshold of 0 % has no direction; give e.g. "
                f"{name}:-0.1% (any drop) or {name}:+0.1% (any rise)"
            )
        if not sign:  # the metric's worse direction
            sign = "-" if METRICS[name] else "+"
        out.append(Threshold(name, -value if sign == "-" else value))
    return out


def _beyond(change: float, t: Threshold) -> bool:
    limit = t.percent / 100
    return change < limit if limit < 0 else change > limit


def _where(r: Mapping[str, Any]) -> str:
    return (
        f"{r['method']} {r['task']}"
        + (f" c={r['concurrency']}" if "concurrency" in r else "")
        + (f" position {r['position']}" if r.get("position") is not None else "")
    )


def evaluate(
    thresholds: list[Threshold],
    acceptance: Sequence[Mapping[str, Any]],
    positions: Sequence[Mapping[str, Any]],
    speed: Sequence[Mapping[str, Any]],
) -> list[GateRow]:
    """One row per threshold × comparable figure of its metric (and one per threshold that found none); reads
    acceptance, position and speed rows alike (compare/rows.py), by the keys they share."""
    rows: list[GateRow] = []
    for t in thresholds:
        found = 0
        if t.metric in ACCEPTANCE_METRICS:
            candidates = [
                r for r in (positions if t.metric == "per_position" else acceptance) if r["figure"] == t.metric
            ]
        else:
            candidates = [r for r in speed if r["figure"] == t.metric]
        for r in candidates:
            if r.get("missing"):  # a figure no side can be read on checks nothing: the gate cannot pass on it
                found += 1
                rows.append(
                    {
                        "threshold": t.text,
                        "figure": _where(r),
                        "change": None,
                        "low": None,
                        "high": None,
                        "basis": r["verdict"],
                        "failed": True,
                    }
                )
                continue
            if not r["comparable"] or r.get("relative") is None:
                continue
            found += 1
            where = _where(r)
            if t.metric in ACCEPTANCE_METRICS:
                # the table's own verdict (compare/acceptance.py decide), then the size of the move
                failed = moved(r) and _beyond(r["relative"], t)
                basis = "exact sums" + (
                    f"; recomputed ({r['flagged']}'s summary.json disagreed)" if r.get("flagged") else ""
                )
            elif r.get("ratio_low") is None:
                failed = _beyond(r["relative"], t)
                basis = "point only"
            else:
                low, high = r["ratio_low"] - 1, r["ratio_high"] - 1
                failed = _beyond(high, t) if t.percent < 0 else _beyond(low, t)
                basis = "95 % interval"
            rows.append(
                {
                    "threshold": t.text,
                    "figure": where,
                    "change": r["relative"],
                    "low": None if basis != "95 % interval" else r["ratio_low"] - 1,
                    "high": None if basis != "95 % interval" else r["ratio_high"] - 1,
                    "basis": basis,
                    "failed": failed,
                }
            )
        if not found:
            rows.append(
                {
                    "threshold": t.text,
                    "figure": "no comparable figure of this metric",
                    "change": None,
                    "low": None,
                    "high": None,
                    "basis": "nothing checked",
                    "failed": True,
                }
            )
    return rows
