"""What a method's cross-check count is made of. One total ("exact (202 checks)") overstates independence: bench's
spec_decode_* fields are bench's own /metrics deltas (the same counters read twice), many per-position identities
are 0 = 0, the warm-up window's checks are about no measured request, and a baseline's checks are bench
completeness only. Each check is put in one kind, read from the summary as it is (any bundle)."""

from __future__ import annotations

from typing import Any

from specstack.results.summary import Summary, Window

# A per-request figure from the responses against a /metrics delta of the window. Not independent: both are the
# engine's own bookkeeping (what it attaches to each response, what it counts), so they agree when the engine is
# consistent with itself; no outside measurement of what was drafted or accepted exists to check them against.
PER_REQUEST = "per-request vs counters"
COMPLETENESS = "completeness"  # bench's own count of answers / tokens against the server's counters
SAME_COUNTERS = "same counters"  # bench's spec_decode_* fields: bench read the same /metrics counters itself
INTERNAL = "/metrics internal"  # one /metrics delta against another (the counters agree among themselves)
TRIVIAL = "trivial (0 = 0)"  # both sides 0: holds whatever the engine did
WARMUP = "warm-up"  # the warm-up window: no measured request in it

KINDS = (PER_REQUEST, COMPLETENESS, SAME_COUNTERS, INTERNAL, TRIVIAL, WARMUP)


def kind(window: Window, check: dict[str, Any]) -> str:
    """The kind of one check of one window (the order decides: a 0 = 0 is trivial in any window, the warm-up's
    included, so the warm-up count holds only the warm-up's checks that could have failed)."""
    name = check.get("name") or ""
    if check.get("expected") == 0 and check.get("actual") == 0:
        return TRIVIAL
    if window.phase == "warmup":
        return WARMUP
    if name.startswith("bench spec_decode_") or name.startswith("bench per-position rate"):
        return SAME_COUNTERS
    if name.startswith("bench ") or "vllm:request_success" in name or "generation_tokens" in name:
        return COMPLETENESS
    if name.startswith("Σ_p Δ"):
        return INTERNAL
    return PER_REQUEST


def counts(summary: Summary | dict[str, Any]) -> dict[str, int]:
    """Checks per kind over every window of a method, in KINDS order (kinds with none included as 0)."""
    out = dict.fromkeys(KINDS, 0)
    for w in Summary.of(summary).window_list:
        for c in w.checks or []:
            out[kind(w, c)] += 1
    return out


def label(summary: Summary | dict[str, Any]) -> str:
    """ "40 per-request vs counters (+ 12 completeness, 16 same counters, 2 internal, 30 trivial, 20 warm-up)";
    the per-request identities first, the rest apart. A baseline says "completeness only"."""
    by = counts(summary)
    rest = ", ".join(f"{n} {k}" for k, n in by.items() if n and k != PER_REQUEST)
    if not by[PER_REQUEST]:
        return f"{rest or 'none'}; no per-request identity" if by[COMPLETENESS] else (rest or "none")
    return f"{by[PER_REQUEST]} {PER_REQUEST}" + (f" (+ {rest})" if rest else "")
