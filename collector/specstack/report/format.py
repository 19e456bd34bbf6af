"""How figures are written in every human-readable output (the report, the console table, the harness
benchmarks): None is "n/a" (not measured, or no drafts), never 0."""

from __future__ import annotations

import math
from typing import Any


def pct(v: float | None, digits: int = 1) -> str:
    """A share as a percentage: 0.418 -> "41.8 %"."""
    return "n/a" if v is None else f"{100 * v:.{digits}f} %"


def num(v: float | None, digits: int = 2) -> str:
    """A number; large whole ones with thousands separators, booleans as yes/no."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int) or (isinstance(v, float) and v.is_integer() and abs(v) >= 1000):
        return f"{int(v):,}"
    return f"{v:.{digits}f}"


def fixed(v: float | None, digits: int = 2) -> str:
    """Fixed decimals whatever the size (benchmark tables): 4800.0 -> "4800.00"."""
    return "n/a" if v is None else f"{v:.{digits}f}"


def times(v: float | None, digits: int = 2) -> str:
    """A ratio: 1.19 -> "1.19×"."""
    return "n/a" if v is None else f"{v:.{digits}f}×"


def seconds(v: float | None, digits: int = 2) -> str:
    return "n/a" if v is None else f"{v:.{digits}f} s"


def interval(low: float | None, high: float | None) -> str:
    """A 95 % interval after its point estimate: " [0.91–1.12]"; empty without one."""
    return "" if low is None or high is None else f" [{low:.2f}–{high:.2f}]"


def over_repeats(repeats: int) -> str:
    """How the figure pools repeats, said only where there are several: "median over repeats" promises a spread a
    one-repeat run does not have."""
    return "median over repeats" if repeats > 1 else "one repeat"


# What a run's weights make of its figures (the manifest's model_weights, from [model_weights] in methods.toml).
WEIGHTS_NOTE = {
    "trained": "trained weights: acceptance and speed are a real model's",
    "random": "random weights: the accounting only, acceptance and speed mean nothing",
}


def weights_line(manifest: dict[str, Any]) -> str | None:
    """ "model set tiny: random weights: ..." for a run whose manifest says its weights, else None."""
    note = WEIGHTS_NOTE.get(manifest.get("model_weights") or "")
    return f"model set {manifest.get('model_set')}: {note}" if note else None
