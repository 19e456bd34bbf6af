"""Prefix caching in a run: whether it was on (`--prefix-caching` flips methods.toml's [common] key for every
method through services/serve_args.py), and the hit rate of every window (figures/prefix_cache.py) recorded in
the summary. A run id keeps one setting: resuming or extending a run with the other is refused, so its
methods stay comparable.
"""

from __future__ import annotations

import json
from pathlib import Path

from specstack.config.methods import ServePlan, serve_args
from specstack.errors import UserError
from specstack.figures.prefix_cache import figures
from specstack.measure import bench, snapshots
from specstack.results import layout
from specstack.results.summary import BenchCell, PhaseFigures, Summary, given

# The first snapshot of a method run: its server's vllm:cache_config_info says whether it caches.
FIRST_SNAPSHOT = layout.snapshot("warmup", "before")


def setting(plan: ServePlan, prefix_caching: bool) -> dict:
    """What the summary records before the server starts: the option, and the flag the plan serves."""
    return {
        "option": bool(prefix_caching),
        "serve_flag": plan.flags.get(serve_args.PREFIX_CACHING_KEY),
        "observed": None,
    }


def _observed(staging: Path) -> bool | None:
    path = Path(staging) / FIRST_SNAPSHOT
    if not path.exists():
        return None
    value = snapshots.parse(path.read_text()).cache_config.get("enable_prefix_caching")
    return {"True": True, "False": False}.get(value) if value is not None else None


def add_to_summary(summary: Summary, staging: Path) -> Summary:
    """Every window's figures, and per task the acceptance phase's, each sampled phase's and each bench cell's."""
    windows = [w.updated(prefix_cache=figures((w.counters or {}).get("counters"))) for w in summary.window_list]
    by_name = {w.name: w.prefix_cache for w in windows}
    setting = given(summary, "prefix_caching", None) or {"option": None, "serve_flag": None, "observed": None}
    summary = summary.updated(windows=windows, prefix_caching={**setting, "observed": _observed(staging)})
    unknown = figures(None)
    tasks = {}
    for name, task in summary.task_figures.items():
        task = task.updated(prefix_cache=by_name.get(layout.acceptance_window(name), unknown))
        if task.bench:
            task = task.updated(
                bench=[cell.updated(prefix_cache=by_name.get(_cell_window(name, cell), unknown)) for cell in task.bench]
            )
        if task.sampled:
            task = task.updated(
                sampled={
                    t: phase.updated(prefix_cache=by_name.get(_phase_window(name, phase), unknown))
                    for t, phase in task.sampled.items()
                }
            )
        tasks[name] = task
    return summary.updated(tasks=tasks) if summary.tasks is not None else summary


def _cell_window(task: str, cell: BenchCell) -> str:
    if cell.file:
        return layout.bench_window(layout.bench_cell(cell.file))
    assert cell.repeat is not None, "a bench cell without its file names its repeat"
    return layout.bench_window(bench.cell_name(task, cell.repeat, concurrency=cell.concurrency))


def _phase_window(task: str, phase: PhaseFigures) -> str:
    assert phase.temperature is not None, "every sampled phase names its temperature (method_summary._sampled)"
    return layout.sampled_window(task, phase.temperature)


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
    raise UserError(
        f"run {run_id!r} was started {was} --prefix-caching, and this command asks {now} it: every "
        f"method of a run is served alike, so it cannot resume or extend that run. "
        f"{'Add' if recorded else 'Drop'} --prefix-caching to continue it, or use a new --run-id"
    )
