"""How to read ITL per cell (issue #41 point 9): the tokens each streamed chunk carried, beside the ITL in the
latency table, and a ⚠ note naming the cells whose chunks carried more than one token, where bench's ITL is a
gap per chunk, with the gap per token beside it. The figures are report/speed.py's (figures/chunks.py)."""

from __future__ import annotations

from specstack.report.format import num
from specstack.report.render import Block
from specstack.report.rows import SpeedRow
from specstack.report.verdicts import label


def per_chunk_cell(r: SpeedRow) -> str:
    """The latency table's cell: "2.50 ⚠" where ITL is per chunk, "1.00", or "n/a" (no per-request data)."""
    return num(r.get("tokens_per_chunk")) + (" ⚠" if r.get("itl_per_chunk") else "")


def per_chunk_note(rows: list[SpeedRow]) -> list[Block]:
    """The rows whose chunks carried more than one token, each with its ITL p50 per chunk and per token."""
    found = [r for r in rows if r.get("itl_per_chunk")]
    if not found:
        return []
    cells = [
        f"{label(r)} c={r['concurrency']}: {num(r['tokens_per_chunk'])} tokens per chunk, ITL p50 "
        f"{num(r.get('itl_p50_ms'))} ms per chunk ≈ {num(r.get('itl_p50_per_token_ms'))} ms per token"
        + (" (‡: the gaps are bursts, neither says much)" if r.get("itl_degenerate") else "")
        for r in found
    ]
    return [
        (
            "p",
            "⚠ **ITL is per chunk in these cells**: a streamed chunk carried more than one token on average "
            "(a speculative step streams every token it accepted in one chunk), so bench's ITL there is the "
            "gap between chunks, not between tokens; ITL p50 ÷ tokens per chunk is the gap per token: "
            + "; ".join(cells)
            + ". Tokens per chunk = Σ output tokens ÷ Σ chunks (a request's chunks = its "
            "ITL gaps + 1) over the repeats' successful requests, from bench's per-request data "
            "(--save-detailed); n/a: a cell without it. Compare methods by TPOT, a time per token by "
            "construction.",
        )
    ]
