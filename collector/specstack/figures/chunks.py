"""Tokens per streamed chunk: how to read a bench cell's ITL. Bench's ITL is the gap between streamed chunks, and
a speculative step streams every token it accepted in one chunk (a server that falls behind its client merges
tokens into a chunk too), so ITL is a time per chunk; ÷ tokens per chunk it is a time per token.

From bench's per-request lists (`--save-detailed`: `itls`, `output_lens`, `errors`), over the requests that
succeeded: tokens per chunk = Σ output tokens ÷ Σ chunks, a request's chunks = its gaps + 1 (the first chunk has
no gap before it). None without those lists: unknown, never 0 or 1."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def stream_chunks(bench: Mapping[str, Any] | None) -> dict[str, int] | None:
    """{"output_tokens", "chunks"} summed over the cell's successful requests; None without per-request lists."""
    itls, lens = (bench or {}).get("itls"), (bench or {}).get("output_lens")
    if not isinstance(itls, list) or not isinstance(lens, list) or not itls or len(itls) != len(lens):
        return None
    errors = (bench or {}).get("errors") or [""] * len(itls)
    ok = [(gaps or [], n) for gaps, n, e in zip(itls, lens, errors) if not e and n]
    if not ok:
        return None
    return {"output_tokens": sum(n for _, n in ok), "chunks": sum(len(gaps) + 1 for gaps, _ in ok)}


def tokens_per_chunk(counts: Sequence[Mapping[str, int] | None]) -> float | None:
    """Σ output tokens ÷ Σ chunks over cells (a row's repeats), the cells without per-request lists left out;
    None when none has them."""
    known = [c for c in counts if c and c.get("chunks")]
    if not known:
        return None
    return sum(c["output_tokens"] for c in known) / sum(c["chunks"] for c in known)


def multi_token(per_chunk: float | None) -> bool:
    """Whether chunks carried more than one token on average, as the report writes it (two decimals): a mean that
    reads 1.00 is one token a chunk, and its ITL is per token."""
    return per_chunk is not None and round(per_chunk, 2) > 1.0
