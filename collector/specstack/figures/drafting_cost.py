"""What a speculative method pays per target pass beyond a plain decode step: the reason a method can be slower
than its acceptance promises (docs/figures.md, "drafting cost per target pass").

With tokens per target pass B (decode tokens ÷ the target's decode passes) and a plain decode step costing the
baseline's TPOT, a method whose drafting were free and whose verify pass cost one plain step would decode at
baseline TPOT ÷ B: the free-drafting TPOT. Its measured TPOT × B is what one of its target passes really took
(drafting, the verify pass over K + 1 positions, the bookkeeping); that minus the baseline's TPOT is the cost of
speculating per target pass. Zero: speculation was free; the method's TPOT speedup then equals B."""

from __future__ import annotations


def pass_ms(tpot_ms: float | None, tokens_per_pass: float | None) -> float | None:
    """The time one target pass of the method took: its TPOT × the tokens each pass emitted."""
    if tpot_ms is None or tokens_per_pass is None or tokens_per_pass <= 0:
        return None
    return tpot_ms * tokens_per_pass


def free_drafting_tpot_ms(baseline_tpot_ms: float | None, tokens_per_pass: float | None) -> float | None:
    """The TPOT the method would have with free drafting and a verify pass as dear as a plain decode step."""
    if baseline_tpot_ms is None or tokens_per_pass is None or tokens_per_pass <= 0:
        return None
    return baseline_tpot_ms / tokens_per_pass


def cost_per_pass_ms(
    tpot_ms: float | None, baseline_tpot_ms: float | None, tokens_per_pass: float | None
) -> float | None:
    """Drafting cost per target pass (ms): the method's pass time minus a plain decode step (the baseline's TPOT).
    Equivalently the baseline's TPOT × (1 ÷ efficiency − 1), where efficiency = TPOT speedup ÷ B."""
    took = pass_ms(tpot_ms, tokens_per_pass)
    if took is None or baseline_tpot_ms is None:
        return None
    return took - baseline_tpot_ms
