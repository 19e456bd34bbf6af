"""Capacity at the SLO of A and B side by side (--capacity, figures/capacity.py), per method × task in both runs.

Each side's capacity is a bracket: it meets the SLO at `rate` and fails it at `bound`. B against A is the ratio of
the passing rates, with the interval both brackets allow ([B pass ÷ A fail, B fail ÷ A pass]): "changed (better|
worse)" when that interval excludes 1.0×, "within the brackets" when it includes it. Other SLO targets or another
share on the two sides compare different things: not comparable.
"""

from __future__ import annotations

from typing import Any

from specstack.compare.pairing import SPEED, Pair
from specstack.compare.rows import CapacityRow
from specstack.figures import capacity
from specstack.results.reader import MethodData


def _entry(md: MethodData, task: str) -> dict[str, Any] | None:
    entry = md.record.load_figures.task_loads.get(task)
    return entry.capacity if entry else None


def _verdict(pair: Pair, a: dict[str, Any], b: dict[str, Any], ratio: dict[str, Any] | None) -> str:
    blocked = pair.not_comparable(SPEED)
    if blocked:
        return blocked
    if (a.get("slo"), a.get("share")) != (b.get("slo"), b.get("share")):
        return "not comparable: another SLO or share on the two sides"
    if ratio is None:
        return "n/a (a side never met the SLO)" if a.get("rate") is None or b.get("rate") is None else "n/a"
    if ratio["low"] > 1.0:
        return "changed (better)"
    if ratio["high"] < 1.0:
        return "changed (worse)"
    return "within the brackets"


def capacity_rows(pairs: list[Pair]) -> list[CapacityRow]:
    rows: list[CapacityRow] = []
    for pair in pairs:
        a, b = _entry(pair.a, pair.task), _entry(pair.b, pair.task)
        if not a and not b:
            continue
        if not a or not b:
            rows.append(
                {
                    "method": pair.method,
                    "label": pair.label,
                    "task": pair.task,
                    "a": (a or {}).get("text"),
                    "b": (b or {}).get("text"),
                    "ratio": None,
                    "ratio_low": None,
                    "ratio_high": None,
                    "verdict": f"capacity searched only in {'A' if a else 'B'}",
                }
            )
            continue
        ratio = capacity.ratio(b, a)
        rows.append(
            {
                "method": pair.method,
                "label": pair.label,
                "task": pair.task,
                "a": a.get("text"),
                "b": b.get("text"),
                "a_rate": a.get("rate"),
                "a_bound": a.get("bound"),
                "b_rate": b.get("rate"),
                "b_bound": b.get("bound"),
                "ratio": (ratio or {}).get("point"),
                "ratio_low": (ratio or {}).get("low"),
                "ratio_high": (ratio or {}).get("high"),
                "verdict": _verdict(pair, a, b, ratio),
            }
        )
    return rows
