"""Prefix caching in a run: whether it was on (`--prefix-caching` flips methods.toml's [common] key for every
method through services/serve_args.py), and the hit rate of every window from vLLM's two counters.

hit rate = Δ vllm:prefix_cache_hits / Δ vllm:prefix_cache_queries over the window, both in prompt tokens
(docs/figures.md, "Prefix cache hit rate"); None (shown n/a) when the window queried nothing: caching off, or
no request admitted. A run id keeps one setting: resuming or extending a run with the other is refused, so its
methods stay comparable.
"""
from __future__ import annotations

import json
from pathlib import Path

from specstack.config import metric_names as m
from specstack.config.methods import serve_args
from specstack.errors import UserError
from specstack.measure import bench, snapshots
from specstack.results import layout

# The first snapshot of a method run: its server's vllm:cache_config_info says whether it caches.
FIRST_SNAPSHOT = layout.snapshot("warmup", "before")


def figures(counters: dict | None) -> dict:
    """queries, hits and hit rate from a window's counter deltas (family -> Δ); None where unknown: the
    counters absent (an older vLLM, a window without snapshots) or, for the rate, no queries."""
    counters = counters or {}
    if m.PREFIX_CACHE_QUERIES not in counters:
        return {"queries": None, "hits": None, "hit_rate": None}
    queries = int(round(counters[m.PREFIX_CACHE_QUERIES]))
    hits = int(round(counters.get(m.PREFIX_CACHE_HITS, 0.0)))
    return {"queries": queries, "hits": hits, "hit_rate": hits / queries if queries else None}


def pooled(parts: list[dict]) -> dict:
    """Several windows as one (bench repeats of a cell): Σ hits / Σ queries, never a mean of rates."""
    known = [p for p in parts if p.get("queries") is not None]
    if not known:
        return {"queries": None, "hits": None, "hit_rate": None}
    queries, hits = sum(p["queries"] for p in known), sum(p["hits"] for p in known)
    return {"queries": queries, "hits": hits, "hit_rate": hits / queries if queries else None}


def setting(plan: dict, prefix_caching: bool) -> dict:
    """What the summary records before the server starts: the option, and the flag the plan serves."""
    return {"option": bool(prefix_caching), "serve_flag": plan["flags"].get(serve_args.PREFIX_CACHING_KEY),
            "observed": None}


def enabled(summary: dict) -> bool | None:
    """Whether the method's server cached prefixes: what it reported (vllm:cache_config_info), else the plan's
    flag (None for a summary recorded before prefix caching was)."""
    record = summary.get("prefix_caching") or {}
    return record.get("observed") if record.get("observed") is not None else record.get("serve_flag")


def _observed(staging: Path) -> bool | None:
    path = Path(staging) / FIRST_SNAPSHOT
    if not path.exists():
        return None
    value = snapshots.parse(path.read_text()).cache_config.get("enable_prefix_caching")
    return {"True": True, "False": False}.get(value)


def add_to_summary(summary: dict, staging: Path) -> None:
    """Every window's figures, and per task the acceptance phase's, each sampled phase's and each bench cell's."""
    by_name = {}
    for w in summary["windows"]:
        w["prefix_cache"] = figures((w.get("counters") or {}).get("counters"))
        by_name[w["name"]] = w["prefix_cache"]
    summary.setdefault("prefix_caching", {"option": None, "serve_flag": None, "observed": None})
    summary["prefix_caching"]["observed"] = _observed(staging)
    unknown = figures(None)
    for name, task in summary["tasks"].items():
        task["prefix_cache"] = by_name.get(layout.acceptance_window(name), unknown)
        for cell in task.get("bench") or []:
            window = layout.bench_window(layout.bench_cell(cell["file"]) if cell.get("file") else
                                         bench.cell_name(name, cell["repeat"], concurrency=cell["concurrency"]))
            cell["prefix_cache"] = by_name.get(window, unknown)
        for sampled in (task.get("sampled") or {}).values():
            sampled["prefix_cache"] = by_name.get(layout.sampled_window(name, sampled["temperature"]), unknown)


def recorded_setting(run_dir: Path) -> bool | None:
    """The setting a run was started with (None: no method of it started yet). A recipe recorded before the
    option existed served methods.toml's [common], off."""
    path = Path(run_dir) / layout.MANIFEST
    if not path.exists():
        return None
    recipe = json.loads(path.read_text()).get("recipe")
    if recipe is None:
        return None
    return bool(recipe.get("prefix_caching", False))


def check_same_setting(run_id: str, run_dir: Path, prefix_caching: bool) -> None:
    """Refuse to resume or extend a run with the other prefix-caching setting: its methods would not be alike."""
    recorded = recorded_setting(run_dir)
    if recorded is None or recorded == bool(prefix_caching):
        return
    was, now = ("with", "without") if recorded else ("without", "with")
    raise UserError(f"run {run_id!r} was started {was} --prefix-caching, and this command asks {now} it: every "
                    f"method of a run is served alike, so it cannot resume or extend that run. "
                    f"{'Add' if recorded else 'Drop'} --prefix-caching to continue it, or use a new --run-id")
