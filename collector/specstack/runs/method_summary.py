"""A method's figures and verdict, from its windows and its bundle: per task the acceptance summed over the
acceptance phase's responses and the bench cells; then whether every cross-check held, and the run's status.
The figures are built as the summary's records (results/summary.py `make`: a key they do not name is an error)."""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console

from specstack.config.workloads import Task
from specstack.figures import bench_cell
from specstack.results import layout
from specstack.results.bundle import MethodBundle
from specstack.results.records import read_records
from specstack.results.summary import BenchCell, CrossCheck, PhaseFigures, Summary, TaskFigures
from specstack.runs import prefix_cache

console = Console(stderr=True)


def _bench_cells(windows: list[dict], task: str, bundle: MethodBundle, slo: dict | None) -> list[BenchCell]:
    out = []
    for w in windows:
        if w["phase"] == "bench" and w["task"] == task:
            file = layout.bench_file(layout.bench_cell(w["name"]))  # the window's cell (measure/bench.py cell_name)
            figures = bench_cell.cell_figures(_load(bundle.path(file)), slo, w["concurrency"])
            named = {k: v for k, v in figures.items() if k in BenchCell.keys()}  # noqa: SIM118 (a classmethod)
            # load: "concurrency" (closed loop; a summary older than open-loop cells has no key), "rate" or "probe"
            out.append(
                BenchCell.make(
                    concurrency=w["concurrency"],
                    request_rate=w.get("request_rate"),
                    load=w.get("load") or "concurrency",
                    repeat=w["repeat"],
                    status=w["status"],
                    file=file,
                    **named,
                    extra={k: v for k, v in figures.items() if k not in named},
                )
            )
    return out


sampled_window, sampled_file = layout.sampled_window, layout.sampled_records  # kept: tests/runs import them here


def _acceptance(figures: dict) -> dict:
    """A window's acceptance as the summary keeps it (the greedy phase's and each sampled phase's)."""
    return {
        "acceptance_rate": figures.get("acceptance_rate"),
        "mean_acceptance_length": figures.get("mean_acceptance_length"),
        "histogram": figures.get("histogram"),
        "per_position": figures.get("per_position_rates"),  # vLLM's: share of all drafting steps
        "per_position_conditional": figures.get("per_position_conditional_rates"),  # / drafted >= p+1
        "drafted_per_position": figures.get("drafted_per_position"),
        "no_accept_share": figures.get("no_accept_share"),
        "num_spec_steps": figures.get("steps"),
        "num_draft_tokens": figures.get("draft_tokens"),
        "num_accepted_draft_tokens": figures.get("accepted"),
    }


def _categories(window: dict | None) -> dict[str, PhaseFigures]:
    """category -> requests and acceptance, split exactly from the window's per-request metrics ({} when the
    task's rows have no category)."""
    return {
        name: PhaseFigures.make(requests=c["requests"], **_acceptance(c))
        for name, c in ((window or {}).get("by_category") or {}).items()
    }


def _sampled(windows: list[dict], task: str, temperatures) -> dict[str, PhaseFigures]:
    """temperature (as text, "0.6") -> acceptance and requests of the task's sampled window."""
    out = {}
    for t in temperatures:
        w = next((w for w in windows if w["name"] == layout.sampled_window(task, t)), None)
        if w is not None:
            out[f"{t:g}"] = PhaseFigures.make(
                temperature=t,
                status=w["status"],
                **_acceptance(w.get("from_responses") or {}),
                categories=_categories(w),
            )
    return out


def _answers(rows: list[dict]) -> dict:
    return {
        "requests": len(rows),
        "completion_tokens": sum(((r.get("usage") or {}).get("completion_tokens") or 0) for r in rows),
        "finish_reasons": _count(r.get("finish_reason") for r in rows),
    }


def _turns(windows: list[dict], task: str, inputs: dict, bundle: MethodBundle) -> dict[str, PhaseFigures]:
    """{"2": turn 2's greedy acceptance, split by category like turn 1, with the file its chats came from}
    ({} without a turn-2 window)."""
    w = next((w for w in windows if w["name"] == layout.turn2_window(task)), None)
    if w is None:
        return {}
    rows = read_records(bundle.staging / layout.turn2_records(task))
    # the run's turn-2 inputs (file, sha256, answers_from, left_out); its "requests" are this run's answers'
    figures = {
        "turn": 2,
        "status": w["status"],
        **(inputs.get(task) or {}),
        **_acceptance(w.get("from_responses") or {}),
        **_answers(rows),
    }
    return {"2": PhaseFigures.make(**figures, categories=_categories(w))}


def task_figures(
    name: str,
    windows: list[dict],
    bundle: MethodBundle,
    temperatures=(),
    slo: dict | None = None,
    turn2_inputs: dict | None = None,
) -> TaskFigures:
    """One task's figures: the acceptance phase's acceptance summed over its responses and its answers, split by
    category, its bench cells, its sampled phases and its turn 2."""
    acc = next((w for w in windows if w["name"] == layout.acceptance_window(name)), None)
    # read only (no bundle.path): no empty acceptance/ folder
    rows = read_records(bundle.staging / layout.acceptance_records(name))
    return TaskFigures.make(
        **_acceptance((acc or {}).get("from_responses") or {}),
        **_answers(rows),
        # a dataset's categories (mt-bench, spec-bench, …): the acceptance window split by request
        categories=_categories(acc),
        bench=_bench_cells(windows, name, bundle, slo),
        # acceptance when users sample (--temperatures): one window per temperature, same prompts and seeds
        sampled=_sampled(windows, name, temperatures),
        # --turns 2: turn 2 on the baseline's turn-1 answers (runs/turns.py), the same chats for every method
        turns=_turns(windows, name, turn2_inputs or {}, bundle),
    )


def finish(
    summary: Summary,
    tasks: dict[str, Task],
    bundle: MethodBundle,
    allow_mismatch: bool,
    temperatures=(),
    slo: dict | None = None,
) -> Summary:
    """Per-task figures, then the verdict."""
    windows = [w.to_json() for w in summary.window_list]  # as measure/windows.py recorded them
    for name in tasks:
        figures = task_figures(name, windows, bundle, temperatures, slo, summary.turn2_inputs)
        summary = summary.updated(tasks={**summary.task_figures, name: figures})
    summary = prefix_cache.add_to_summary(summary, bundle.staging)  # hit rate per window, task, phase, bench cell
    return verdict(summary, allow_mismatch)


def verdict(summary: Summary, allow_mismatch: bool) -> Summary:
    """The cross-check verdict and the run status: a broken window or a mismatch fails the run."""
    windows = summary.window_list
    mismatches = [dict(window=w.name, **c) for w in windows for c in w.checks or [] if not c["ok"]]
    broken = [w for w in windows if w.status != "ok"]
    summary = summary.updated(
        crosscheck=CrossCheck.make(
            ok=not mismatches and not broken,
            checks=sum(len(w.checks or []) for w in windows),
            mismatches=mismatches,
            allowed=allow_mismatch,
        )
    )
    if summary.error is None and broken:
        summary = summary.updated(error="; ".join(f"{w.name}: {w.status}: {w.reason}" for w in broken))
    if summary.error is None and mismatches and not allow_mismatch:
        summary = summary.updated(
            error=f"{len(mismatches)} cross-check mismatch(es); rerun with --allow-mismatch to keep going"
        )
    summary = summary.updated(status="failed" if summary.error else "ok")
    for m in mismatches:
        console.print(
            f"[bold red]CROSS-CHECK MISMATCH[/] {summary.method} {m['window']}: {m['name']}: "
            f"responses/bench={m['expected']} counters={m['actual']}. {m['hint']}"
        )
    if summary.error:
        console.print(f"[bold red]{summary.method} FAILED[/]: {summary.error}")
    return summary


def _count(values) -> dict:
    out: dict = {}
    for v in values:
        out[str(v)] = out.get(str(v), 0) + 1
    return out


def _load(path: Path) -> dict:
    return json.loads(path.read_text()) if path.exists() else {}
