"""Acceptance-phase figures of A and B side by side (greedy, n=1: exact sums over the task's requests).

These figures are not samples of a noisy process but sums of counts, so the verdict is exact: "same" when
the counts they rest on are identical, "changed" on any difference (however small; its size is in Δ). The
rate and length rest on (verify steps R, draft tokens D, accepted C); a position p on (steps accepting at least
p+1, R); a histogram bucket on its step count.
"""
from __future__ import annotations

from specstack.compare.pairing import ACCEPTANCE, SHAPE, Pair


def relative(a: float | None, b: float | None) -> float | None:
    """(B − A) / A; None where A is 0 or either is missing."""
    if a is None or b is None or a == 0:
        return None
    return (b - a) / a


def _figures(md, task: str) -> dict:
    f = md.tasks.get(task) or {}
    drafts = f.get("num_draft_tokens")
    return {} if not drafts else f    # plain decode or no drafts: n/a, never 0


def _row(pair: Pair, figure: str, position: int | None, a, b, counts_a, counts_b, blocked: str | None) -> dict:
    if blocked:
        verdict = blocked
    elif a is None and b is None:
        verdict = "n/a (no drafts on either side)"
    elif counts_a == counts_b:
        verdict = "same"
    else:
        verdict = "changed"
    return {"method": pair.method, "label": pair.label, "task": pair.task, "figure": figure, "position": position,
            "a": a, "b": b, "delta": None if a is None or b is None else b - a, "relative": relative(a, b),
            "verdict": verdict, "comparable": blocked is None}


def acceptance_rows(pairs: list[Pair]) -> tuple[list[dict], list[dict], list[dict]]:
    """(rate and length, per position, histogram) rows of every pair of speculative methods."""
    main, positions, hist = [], [], []
    for pair in pairs:
        if not (pair.a.speculative or pair.b.speculative):
            continue
        fa, fb = _figures(pair.a, pair.task), _figures(pair.b, pair.task)
        blocked = pair.not_comparable(ACCEPTANCE)
        sums = ("num_spec_steps", "num_draft_tokens", "num_accepted_draft_tokens")
        ca, cb = tuple(fa.get(k) for k in sums), tuple(fb.get(k) for k in sums)
        main.append(_row(pair, "acceptance_rate", None, fa.get("acceptance_rate"), fb.get("acceptance_rate"),
                         ca, cb, blocked))
        main.append(_row(pair, "acceptance_length", None, fa.get("mean_acceptance_length"),
                         fb.get("mean_acceptance_length"), ca, cb, blocked))
        shape_blocked = pair.not_comparable(SHAPE)
        pa, pb = fa.get("per_position") or [], fb.get("per_position") or []
        ra, rb = fa.get("num_spec_steps") or 0, fb.get("num_spec_steps") or 0
        for p in range(max(len(pa), len(pb))):
            a = pa[p] if p < len(pa) else None
            b = pb[p] if p < len(pb) else None
            # the count behind the rate: steps that accepted at least p+1 drafts (rate × R, an integer)
            na = None if a is None else (round(a * ra), ra)
            nb = None if b is None else (round(b * rb), rb)
            positions.append(_row(pair, "per_position", p, a, b, na, nb, shape_blocked))
        ha, hb = fa.get("histogram") or [], fb.get("histogram") or []
        for j in range(max(len(ha), len(hb))):
            a = ha[j] if j < len(ha) else None
            b = hb[j] if j < len(hb) else None
            hist.append(_row(pair, "histogram", j, a, b, a, b, shape_blocked))
    return main, positions, hist
