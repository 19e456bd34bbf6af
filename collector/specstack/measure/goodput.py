"""Goodput under service-level objectives (`--slo ttft:500,tpot:50`): per bench cell, the requests that met
every target and their rate, computed from bench's per-request results and checked against bench's own
`request_goodput` (its `--goodput` with the same targets) on the same window.

The targets are per request, in milliseconds, as `vllm bench serve --goodput` defines them: a request is good
when its TTFT, its TPOT ((E2EL − TTFT) ÷ (output tokens − 1); 0 for a one-token answer) and its E2EL are each
at most the target given. Goodput = good requests ÷ the cell's duration (requests/s).
"""

from __future__ import annotations

from typing import Any

from specstack.errors import UserError
from specstack.measure.accounting import Check

SLO_KEYS = ("ttft", "tpot", "e2el")
# Bench's goodput is a float it computed from the same numbers: equal up to rounding of the division.
REL_TOLERANCE = 1e-9


def parse_slo(text: str) -> dict[str, float]:
    """ "ttft:500,tpot:50" -> {"ttft": 500.0, "tpot": 50.0} (milliseconds)."""
    out: dict[str, float] = {}
    for part in (p.strip() for p in text.split(",") if p.strip()):
        key, sep, value = part.partition(":")
        key = key.strip().lower().removesuffix("_ms")
        if not sep or key not in SLO_KEYS:
            raise UserError(
                f"--slo {text!r}: {part!r} is not KEY:MILLISECONDS with KEY one of "
                f"{', '.join(SLO_KEYS)} (e.g. --slo ttft:500,tpot:50)"
            )
        try:
            ms = float(value)
        except ValueError:
            raise UserError(f"--slo {text!r}: {value.strip()!r} is not a number of milliseconds") from None
        if not ms > 0 or ms == float("inf"):
            raise UserError(f"--slo {text!r}: the {key} target must be a positive number of milliseconds")
        if key in out:
            raise UserError(f"--slo {text!r}: {key} is given twice")
        out[key] = ms
    if not out:
        raise UserError("--slo needs at least one target, e.g. --slo ttft:500,tpot:50")
    return out


def bench_args(slo: dict[str, float] | None) -> list[str]:
    """Bench's own goodput with the same targets (its per-request results, what ours is computed from, are kept
    for every cell: measure/bench.py passes --save-detailed)."""
    if not slo:
        return []
    return ["--goodput", *(f"{k}:{v:g}" for k, v in slo.items())]


def requests_s(bench: dict[str, Any]) -> list[dict[str, float]] | None:
    """Per successful request: ttft, tpot and e2el in seconds, computed as bench computes them; None without
    per-request results (a cell run without --slo)."""
    ttfts, latencies, lens, errors = (bench.get(k) for k in ("ttfts", "latencies", "output_lens", "errors"))
    if ttfts is None or latencies is None or lens is None:
        return None
    errors = errors or [""] * len(ttfts)
    out = []
    for ttft, e2el, n, error in zip(ttfts, latencies, lens, errors):
        if error or not n:  # bench's failed requests: no answer, not counted in completed nor goodput
            continue
        tpot = (e2el - ttft) / (n - 1) if n > 1 else 0.0
        out.append({"ttft": ttft, "tpot": tpot, "e2el": e2el})
    return out


def figures(bench: dict[str, Any], slo: dict[str, float] | None) -> dict[str, Any] | None:
    """The cell's goodput from its per-request results; None when the run set no SLO."""
    if not slo:
        return None
    per_request = requests_s(bench)
    if per_request is None:
        return {
            "slo": slo,
            "good": None,
            "completed": None,
            "share": None,
            "goodput": None,
            "bench_request_goodput": bench.get("request_goodput"),
        }
    # in bench's own arithmetic (target ms / 1000 >= seconds), so a request on the boundary counts alike
    good = sum(1 for r in per_request if all(v / 1000 >= r[k] for k, v in slo.items()))
    duration = bench.get("duration")
    return {
        "slo": slo,
        "good": good,
        "completed": len(per_request),
        "share": good / len(per_request) if per_request else None,
        "goodput": good / duration if duration else None,
        "bench_request_goodput": bench.get("request_goodput"),
    }


def crosscheck(bench: dict[str, Any], slo: dict[str, float] | None) -> list[Check]:
    """Ours against bench's: the same requests counted, the same goodput."""
    if not slo:
        return []
    f = figures(bench, slo)
    assert f is not None  # None only without an SLO
    if f["completed"] is None:
        return [
            Check(
                "bench kept its per-request results (--save-detailed)",
                "present",
                "absent",
                False,
                "the goodput needs bench's per-request results; every cell runs with --save-detailed",
            )
        ]
    ours, theirs = f["goodput"], f["bench_request_goodput"]
    same = ours is not None and theirs is not None and abs(ours - theirs) <= REL_TOLERANCE * max(abs(theirs), 1e-12)
    checks = [
        Check(
            "per-request results = bench completed",
            f["completed"],
            bench.get("completed"),
            f["completed"] == bench.get("completed"),
        ),
        Check("goodput from per-request results = bench request_goodput", ours, theirs, same or ours == theirs),
    ]
    for c in checks:
        if not c.ok:
            c.hint = (
                "bench's goodput rule differs from specstack's reading of it (measure/goodput.py): a "
                "vLLM version change, or requests counted differently"
            )
    return checks
