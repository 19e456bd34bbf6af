"""Acceptance-phase figures of A and B side by side (greedy, n=1: exact sums over the task's requests).

These figures are not samples of a noisy process but sums of counts, so the verdict is exact: "same" when
the counts they rest on are identical, "changed" on any difference (however small; its size is in Δ). The
rate and length rest on (verify steps R, draft tokens D, accepted C); a position p on (steps accepting at least
p+1, R); a histogram bucket on its step count.

Beside the exact verdict, the rate and the length get B/A with a paired bootstrap interval over the requests
both sides answered on the same prompt: how far the choice of prompts alone could move the ratio. It sizes a
change (K=2 against K=4: far outside it; two vLLM versions differing on one request: inside it); it does not
turn a "changed" into noise, and the gate does not use it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict

import numpy as np

from specstack.compare.pairing import ACCEPTANCE, SHAPE, Pair
from specstack.compare.rows import AcceptanceRow, FigureRow
from specstack.figures import stats as st
from specstack.report.acceptance import acceptance_records
from specstack.results.reader import MethodData
from specstack.results.summary import TaskFigures


def relative(a: float | None, b: float | None) -> float | None:
    """(B − A) / A; None where A is 0 or either is missing."""
    if a is None or b is None or a == 0:
        return None
    return (b - a) / a


SAME, CHANGED = "same", "changed"
# a compared figure -> the summary key it is (figures/recompute.py checks each against its sums and records)
SUMMARY_KEY = {
    "acceptance_rate": "acceptance_rate",
    "acceptance_length": "mean_acceptance_length",
    "per_position": "per_position",
    "histogram": "histogram",
}


def decide(
    counts_a: object,
    counts_b: object,
    a: float | None,
    b: float | None,
    blocked: str | None = None,
    missing: str | None = None,
) -> str:
    """The verdict on one acceptance figure, A against B: the one decision the table, the summary's count of
    changed figures and the --fail-on gate all read (gate.py fails a threshold only on CHANGED). Exact sums:
    SAME when the counts the figure rests on are identical, CHANGED on any difference. The counts and the figures
    are the recomputed ones (results/reader.py): a figure edited in summary.json moves neither."""
    if blocked:
        return blocked
    if missing:
        return f"missing in {missing}'s summary.json (cannot be recomputed)"
    if a is None and b is None:
        return "n/a (no drafts on either side)"
    return SAME if counts_a == counts_b else CHANGED


def moved(row: Mapping[str, Any]) -> bool:
    """The row's figure changed from A to B (decide)."""
    return bool(row["verdict"] == CHANGED)


def _sides(pair: Pair, figure: str, which: str) -> str | None:
    """ "A", "B" or "A and B": the sides whose summary.json disagreed on the figure (which="flagged") or lost it
    beyond recomputing (which="missing"); None: neither."""
    out = []
    for side, md in (("A", pair.a), ("B", pair.b)):
        f = md.finding(pair.task, SUMMARY_KEY[figure])
        if f is not None and (which == "flagged" or f.unknown):
            out.append(side)
    return " and ".join(out) or None


def _figures(md: MethodData, task: str) -> TaskFigures:
    f = md.figures(task)
    return TaskFigures() if not f.num_draft_tokens else f  # plain decode or no drafts: n/a, never 0


def _per_request(pair: Pair) -> tuple[np.ndarray, np.ndarray] | None:
    """(R, D, C) per request, A's and B's rows aligned on the requests both answered with the same prompt."""

    def spec(md: MethodData) -> dict[str, dict[str, Any]]:
        return {r["id"]: r for r in acceptance_records(md, pair.task) if r["spec"] and not r["error"]}

    ra, rb = spec(pair.a), spec(pair.b)
    ids = [i for i in ra if i in rb and ra[i]["messages"] == rb[i]["messages"]]
    if not ids:
        return None
    keys = ("num_spec_steps", "num_draft_tokens", "num_accepted_draft_tokens")

    def rows(r: dict[str, Any]) -> np.ndarray:
        return np.asarray([[float(r[i]["spec"].get(k) or 0) for k in keys] for i in ids])

    return rows(ra), rows(rb)


def _figure(sums: np.ndarray, figure: str) -> np.ndarray:
    """Rate C/D or length 1 + C/R of summed (R, D, C) rows (last axis)."""
    r, d, c = sums[..., 0], sums[..., 1], sums[..., 2]
    with np.errstate(divide="ignore", invalid="ignore"):
        out: np.ndarray = c / d if figure == "acceptance_rate" else 1 + c / r
        return out


class RequestInterval(TypedDict):
    """B/A of a figure over the requests both sides answered alike, with its 95 % interval (request_interval)."""

    requests_paired: int
    ratio: float | None
    ratio_low: float | None
    ratio_high: float | None


def request_interval(
    per_request: tuple[np.ndarray, np.ndarray] | None,
    figure: str,
    *,
    resamples: int = st.BOOTSTRAP_RESAMPLES,
    seed: int = st.SEED,
) -> RequestInterval:
    """B/A of the rate or length over the paired requests, and its percentile-bootstrap 95 % interval
    (requests resampled as pairs; none under MIN_REPEATS requests)."""
    out: RequestInterval = {"requests_paired": 0, "ratio": None, "ratio_low": None, "ratio_high": None}
    if per_request is None:
        return out
    a, b = per_request
    n = len(a)
    out["requests_paired"] = n
    with np.errstate(divide="ignore", invalid="ignore"):
        point = _figure(b.sum(axis=0), figure) / _figure(a.sum(axis=0), figure)
    if not np.isfinite(point):
        return out
    out["ratio"] = float(point)
    if n < st.MIN_REPEATS:
        return out
    idx = np.random.default_rng(seed).integers(0, n, size=(resamples, n))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = _figure(b[idx].sum(axis=1), figure) / _figure(a[idx].sum(axis=1), figure)
    ratios = ratios[np.isfinite(ratios)]
    if ratios.size:
        tail = (1 - st.CONFIDENCE) / 2 * 100
        out["ratio_low"], out["ratio_high"] = (float(x) for x in np.percentile(ratios, [tail, 100 - tail]))
    return out


def _row(
    pair: Pair,
    figure: str,
    position: int | None,
    a: float | None,
    b: float | None,
    counts_a: object,
    counts_b: object,
    blocked: str | None,
) -> FigureRow:
    missing = _sides(pair, figure, "missing")
    return {
        "method": pair.method,
        "label": pair.label,
        "task": pair.task,
        "figure": figure,
        "position": position,
        "a": a,
        "b": b,
        "delta": None if a is None or b is None else b - a,
        "relative": relative(a, b),
        "verdict": decide(counts_a, counts_b, a, b, blocked, missing),
        "comparable": blocked is None and missing is None,
        "flagged": _sides(pair, figure, "flagged"),
        "missing": missing,
    }


def acceptance_rows(pairs: list[Pair]) -> tuple[list[AcceptanceRow], list[FigureRow], list[FigureRow]]:
    """(rate and length, per position, histogram) rows of every pair of speculative methods."""
    main: list[AcceptanceRow] = []
    positions: list[FigureRow] = []
    hist: list[FigureRow] = []
    for pair in pairs:
        if not (pair.a.speculative or pair.b.speculative):
            continue
        fa, fb = _figures(pair.a, pair.task), _figures(pair.b, pair.task)
        blocked = pair.not_comparable(ACCEPTANCE)
        ca, cb = ((f.num_spec_steps, f.num_draft_tokens, f.num_accepted_draft_tokens) for f in (fa, fb))
        per_request = None if blocked else _per_request(pair)
        main.append(
            {
                **_row(pair, "acceptance_rate", None, fa.acceptance_rate, fb.acceptance_rate, ca, cb, blocked),
                **request_interval(per_request, "acceptance_rate"),
            }
        )
        main.append(
            {
                **_row(
                    pair,
                    "acceptance_length",
                    None,
                    fa.mean_acceptance_length,
                    fb.mean_acceptance_length,
                    ca,
                    cb,
                    blocked,
                ),
                **request_interval(per_request, "acceptance_length"),
            }
        )
        shape_blocked = pair.not_comparable(SHAPE)
        pa, pb = fa.per_position or [], fb.per_position or []
        ra, rb = fa.num_spec_steps or 0, fb.num_spec_steps or 0
        for p in range(max(len(pa), len(pb))):
            a = pa[p] if p < len(pa) else None
            b = pb[p] if p < len(pb) else None
            # the count behind the rate: steps that accepted at least p+1 drafts (rate × R, an integer)
            na = None if a is None else (round(a * ra), ra)
            nb = None if b is None else (round(b * rb), rb)
            positions.append(_row(pair, "per_position", p, a, b, na, nb, shape_blocked))
        ha, hb = fa.histogram or [], fb.histogram or []
        for j in range(max(len(ha), len(hb))):
            a = ha[j] if j < len(ha) else None
            b = hb[j] if j < len(hb) else None
            hist.append(_row(pair, "histogram", j, a, b, a, b, shape_blocked))
    return main, positions, hist
