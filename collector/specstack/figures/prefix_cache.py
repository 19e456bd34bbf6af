"""Prefix-cache figures of a window or of several: the hit rate from vLLM's two counters, and whether a method's
server cached prefixes at all (runs/prefix_cache.py records them into the summary; report/prefix_cache.py shows
them).

hit rate = Δ vllm:prefix_cache_hits / Δ vllm:prefix_cache_queries over the window, both in prompt tokens
(docs/figures.md, "Prefix cache hit rate"); None (shown n/a) when the window queried nothing: caching off, or
no request admitted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from specstack.config import metric_names as m
from specstack.results.summary import Summary

# queries, hits, hit_rate; None where unknown
HitRate = dict[str, Any]


def figures(counters: Mapping[str, float] | None) -> HitRate:
    """queries, hits and hit rate from a window's counter deltas (family -> Δ); None where unknown: the
    counters absent (an older vLLM, a window without snapshots) or, for the rate, no queries."""
    counters = counters or {}
    if m.PREFIX_CACHE_QUERIES not in counters:
        return {"queries": None, "hits": None, "hit_rate": None}
    queries = int(round(counters[m.PREFIX_CACHE_QUERIES]))
    hits = int(round(counters.get(m.PREFIX_CACHE_HITS, 0.0)))
    return {"queries": queries, "hits": hits, "hit_rate": hits / queries if queries else None}


def pooled(parts: Sequence[Mapping[str, Any]]) -> HitRate:
    """Several windows as one (bench repeats of a cell): Σ hits / Σ queries, never a mean of rates."""
    known = [p for p in parts if p.get("queries") is not None]
    if not known:
        return {"queries": None, "hits": None, "hit_rate": None}
    queries, hits = sum(p["queries"] for p in known), sum(p["hits"] for p in known)
    return {"queries": queries, "hits": hits, "hit_rate": hits / queries if queries else None}


def enabled(summary: Summary | Mapping[str, Any]) -> bool | None:
    """Whether the method's server cached prefixes: what it reported (vllm:cache_config_info), else the plan's
    flag (None for a summary recorded before prefix caching was). The summary as a record or as JSON."""
    record = (summary.prefix_caching if isinstance(summary, Summary) else summary.get("prefix_caching")) or {}
    observed: bool | None = record.get("observed")
    serve_flag: bool | None = record.get("serve_flag")
    return observed if observed is not None else serve_flag
