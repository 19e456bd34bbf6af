"""K per load: the best num_speculative_tokens per concurrency band from a K × concurrency sweep, picked the way
vLLM's `tune_speculative_k` picks it (vllm/benchmarks/sweep/tune_speculative_k.py, added upstream after 0.32.0;
docs/k-per-load.md), and the `num_speculative_tokens_per_batch_size` schedule vLLM 0.32.0 accepts.

Pure: cells in, decisions out. A cell is one bench repeat `{"k", "concurrency", "repeat", "output_throughput",
"ok"}`; K=0 is the baseline. Per (K, concurrency): the median output throughput over repeats and its MAD; the
stability gate rejects a cell whose relative MAD exceeds 10 % (or with fewer than 3 repeats, or a failed one);
the conservative figure is median − 1.4826 × MAD; per band, every stable K within 1 % of the best conservative
figure ties and the smallest of them wins, so K=0 wins where speculation does not pay by more than 1 %.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any

MIN_RUNS = 3  # vLLM's --min-runs default
MAX_RELATIVE_MAD = 0.10  # --max-objective-relative-mad
RELATIVE_TOLERANCE = 0.01  # --relative-tolerance: within 1 % of the best is a tie
UNCERTAINTY_PENALTY = 1.0  # --uncertainty-penalty
MAD_TO_SD = 1.4826  # MAD → standard deviation for a normal distribution


@dataclass(frozen=True)
class Candidate:
    """One (K, concurrency) cell of the sweep: its repeats and the gate's verdict."""

    k: int
    concurrency: int
    values: tuple[float, ...]  # output tok/s per ok repeat
    failed: int = 0  # repeats that did not finish whole

    @property
    def median(self) -> float | None:
        return statistics.median(self.values) if self.values else None

    @property
    def mad(self) -> float | None:
        m = self.median
        return None if m is None else statistics.median(abs(v - m) for v in self.values)

    @property
    def relative_mad(self) -> float | None:
        m, mad = self.median, self.mad
        if m is None or mad is None:  # both or neither
            return None
        return mad / abs(m) if m else (0.0 if mad == 0 else math.inf)

    @property
    def conservative(self) -> float | None:
        m, mad = self.median, self.mad
        return None if m is None or mad is None else max(m - UNCERTAINTY_PENALTY * MAD_TO_SD * mad, 0.0)

    @property
    def rejected(self) -> str | None:
        """Why the gate rejects this cell; None when it passes."""
        if self.failed:
            return f"{self.failed} repeat(s) failed"
        if len(self.values) < MIN_RUNS:
            return f"{len(self.values)} repeat(s) < {MIN_RUNS}"
        spread = self.relative_mad  # known: the cell has repeats
        if spread is not None and spread > MAX_RELATIVE_MAD:
            return f"unstable: relative MAD {spread:.3f} > {MAX_RELATIVE_MAD:.2f}"
        return None


def candidates(cells: list[dict[str, Any]]) -> dict[int, dict[int, Candidate]]:
    """concurrency -> K -> Candidate, from the cells (one per repeat)."""
    grouped: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for cell in cells:
        grouped.setdefault((cell["concurrency"], cell["k"]), []).append(cell)
    out: dict[int, dict[int, Candidate]] = {}
    for (c, k), group in sorted(grouped.items()):
        ok = [g for g in group if g["ok"] and g.get("output_throughput") is not None]
        out.setdefault(c, {})[k] = Candidate(k, c, tuple(g["output_throughput"] for g in ok), len(group) - len(ok))
    return out


def pick(by_k: dict[int, Candidate]) -> dict[str, Any]:
    """The band's K: among the stable cells, every K within RELATIVE_TOLERANCE of the best conservative
    figure ties and the smallest wins. None when the baseline (K=0) cell is missing or rejected: the speedup
    of every other K would rest on it."""
    base = by_k.get(0)
    stable = {k: c for k, c in by_k.items() if c.rejected is None}
    if base is None:
        return {"k": None, "why": "no baseline (K=0) cells", "ties": []}
    if base.rejected:
        return {"k": None, "why": f"baseline rejected by the gate ({base.rejected})", "ties": []}
    figure = {k: c.conservative for k, c in stable.items() if c.conservative is not None}  # every stable one
    best = max(figure.values())
    if best <= 0:
        return {"k": None, "why": "no positive throughput", "ties": []}
    ties = sorted(k for k, v in figure.items() if v / best >= 1.0 - RELATIVE_TOLERANCE)
    return {"k": ties[0], "why": None, "ties": ties}


def bands(cells: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per concurrency: the chosen K with its evidence, and every candidate with the gate's verdict."""
    table = candidates(cells)
    concurrencies = sorted(table)
    rows = []
    for i, c in enumerate(concurrencies):
        by_k = table[c]
        chosen = pick(by_k)
        base = by_k.get(0)
        k = chosen["k"]
        cell = by_k.get(k) if k is not None else None
        rows.append(
            {
                "concurrency": c,
                "band": [c, concurrencies[i + 1] - 1 if i + 1 < len(concurrencies) else c],
                "k": k,
                "why_none": chosen["why"],
                "ties": chosen["ties"],
                "median_tok_s": cell.median if cell else None,
                "speedup": _ratio(cell, base) if cell else None,
                "relative_mad": cell.relative_mad if cell else None,
                "candidates": [
                    {
                        "k": x.k,
                        "repeats": len(x.values),
                        "median_tok_s": x.median,
                        "conservative_tok_s": x.conservative,
                        "relative_mad": x.relative_mad,
                        "speedup": _ratio(x, base),
                        "gate": x.rejected or "ok",
                    }
                    for x in by_k.values()
                ],
            }
        )
    return rows


def _ratio(cell: Candidate, base: Candidate | None) -> float | None:
    if base is None or not base.median or cell.median is None:
        return None
    return cell.median / base.median


def schedule(rows: list[dict[str, Any]]) -> tuple[list[list[int]] | None, str | None]:
    """The `num_speculative_tokens_per_batch_size` schedule of the bands, or None and why not. As vLLM's tuner:
    every cell must pass the gate, the smallest band must start at batch size 1, every band must offer the same
    K candidates, and neighbouring bands with the same K merge; the last band ends at the largest concurrency
    measured (vLLM carries it on up to --max-num-seqs; nothing is extrapolated here)."""
    if not rows:
        return None, "no cells"
    if rows[0]["concurrency"] != 1:
        return None, "the sweep has no concurrency 1: a schedule must start at batch size 1"
    ks = [sorted(x["k"] for x in r["candidates"]) for r in rows]
    if any(k != ks[0] for k in ks):
        return None, "the concurrencies were not all measured at the same K values"
    rejected = [
        f"K={x['k']} c={r['concurrency']} ({x['gate']})" for r in rows for x in r["candidates"] if x["gate"] != "ok"
    ]
    if rejected:
        return None, "the stability gate rejected " + ", ".join(rejected)
    out: list[list[int]] = []
    for r in rows:
        if out and out[-1][2] == r["k"]:
            out[-1][1] = r["band"][1]
        else:
            out.append([r["band"][0], r["band"][1], r["k"]])
    return out, None


def best_fixed_k(rows: list[dict[str, Any]]) -> int | None:
    """The one K > 0 best over every band: the highest geometric mean of its median speedups, among the K
    whose cells all pass the gate (ties within RELATIVE_TOLERANCE → the smaller K). None when no such K."""
    if not rows:
        return None
    by_k: dict[int, list[float | None]] = {}
    for r in rows:
        for x in r["candidates"]:
            if x["k"] > 0:
                by_k.setdefault(x["k"], []).append(x["speedup"] if x["gate"] == "ok" else None)
    scores = {}
    for k, v in by_k.items():
        passed = [s for s in v if s]
        if len(v) == len(rows) and len(passed) == len(v):  # every band measured, every cell passed the gate
            scores[k] = math.exp(statistics.fmean(math.log(s) for s in passed))
    if not scores:
        return None
    best = max(scores.values())
    return min(k for k, s in scores.items() if s / best >= 1.0 - RELATIVE_TOLERANCE)


def verdict(sched: list[list[int]] | None) -> str:
    """What the schedule means for a run: nothing to run when it is one K everywhere."""
    if sched is None:
        return "no schedule"
    ks = {k for _, _, k in sched}
    if ks == {0}:
        return "K=0 at every load: speculation never pays here; the schedule is the baseline"
    if len(ks) == 1:
        return f"one K at every load (K={ks.pop()}): the schedule is that fixed K"
    return "a different K per load"


def runnable(sched: list[list[int]] | None) -> bool:
    """A schedule worth a server of its own: it differs between bands (else it is a fixed K or the baseline)."""
    return sched is not None and len({k for _, _, k in sched}) > 1


def spec_override(sched: list[list[int]]) -> dict[str, Any]:
    """The speculative-config keys that run the schedule on vLLM 0.32.0: `num_speculative_tokens` is the upper
    bound every scheduled K is clamped to (v1/spec_decode/dynamic/utils.py), so it is the schedule's largest K."""
    return {"num_speculative_tokens": max(k for _, _, k in sched), "num_speculative_tokens_per_batch_size": sched}
