"""Prefix caching in a run: whether it was on (`--prefix-caching` flips methods.toml's [common] key for every
method through services/serve_args.py), and the hit rate of every window (figures/prefix_cache.py) recorded in
the summary. A run id keeps one setting: resuming or extending a run with the other is refused, so its
methods stay comparable.
"""
from __future__ import annotations

import json
from pathlib import Path

from specstack.config.methods import serve_args
from specstack.errors import UserError
from specstack.figures.prefix_cache import figures
from specstack.measure import bench, snapshots
from specstack.results import layout

# The first snapshot of a method run: its server's vllm:cache_config_info says whether it caches.
FIRST_SNAPSHOT = layout.snapshot("warmup", "before")


def setting(plan: dict, prefix_caching: bool) -> dict:
    """What the summary records before the server starts: the option, and the flag the plan serves."""
    return {"option": bool(prefix_caching), "serve_flag": plan["flags"].get(serve_args.PREFIX_CACHING_KEY),
            "observed": None}


def _observed(staging: Path) -> bool | None:
    path = Path(staging) / FIRST_SNAPSHOT
    if not path.exists():
        return None
    value = snapshots.parse(path.read_text()).cache_config.get("enable_prefix_caching")
    return {"True": True, "False": False}.get(value) if value is not None else None


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
