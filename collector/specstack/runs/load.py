"""Load the way production sees it, inside a method run: after a task's closed-loop cells (a fixed number of
requests in flight), open-loop cells (requests arriving at a rate, Poisson or bursty, no cap on in-flight
requests), then, with --capacity, the bounded search for the highest rate meeting the SLO (figures/capacity.py).

Every open-loop cell is a bench window like the closed-loop ones: the same fixed number of prompts, the same
cross-checks (completeness, spec counters, goodput against bench's own), the same repeats.

--rates auto: a baseline derives the rates from its own capacity, the median req/s of its cells at the highest
concurrency of the same run (AUTO_FRACTIONS of it), and records them in the run's manifest (`load_rates`, keyed by
the baseline method and task); every other method of the run reads them there, so a method and its baseline are
measured at the same offered rates.
"""

from __future__ import annotations

from statistics import median

from specstack.errors import UserError
from specstack.figures import capacity
from specstack.measure import bench, goodput
from specstack.results.bundle import update_manifest
from specstack.results.reader import read_manifest
from specstack.results.summary import Load, LoadTask

AUTO_FRACTIONS = (0.25, 0.5, 0.75, 1.0)


def check_rates_known(run) -> None:
    """A method that reuses its baseline's auto rates fails before its server starts when they are missing."""
    if run.opts.rates_auto and run.plan.baseline:
        for task in run.tasks:
            _recorded(run, task)


def rates_for(run, task: str) -> tuple[list[float], str]:
    """(the task's rates, how they were chosen)."""
    opts = run.opts
    if not opts.rates_auto:
        return list(opts.rates), "--rates"
    if run.plan.baseline:
        entry = _recorded(run, task)
    else:
        entry = _recorded_or_none(run, run.plan.method, task) or _derive(run, task)
    return entry["rates"], entry["how"]


def _recorded_or_none(run, baseline: str, task: str) -> dict | None:
    return ((read_manifest(run.run_dir).get("load_rates") or {}).get(baseline) or {}).get(task)


def _recorded(run, task: str) -> dict:
    baseline = run.plan.baseline
    entry = _recorded_or_none(run, baseline, task)
    if entry is None:
        raise UserError(
            f"--rates auto: run {run.opts.run_id!r} has no rates from its baseline {baseline!r} for task "
            f"{task!r}; run {baseline} first in this run (a sweep does), or give the rates (--rates 1,2)"
        )
    return entry


def _derive(run, task: str) -> dict:
    """The baseline's capacity from its highest-concurrency cells of this run; recorded for the other methods."""
    opts = run.opts
    c = max(opts.concurrencies)
    cells = [bench.cell_name(task, r, concurrency=c) for r in range(opts.repeats)]
    rps = [
        b["request_throughput"] for b in (run.bench_result(cell) for cell in cells) if b and b.get("request_throughput")
    ]
    if not rps:
        raise UserError(
            f"--rates auto: the baseline's concurrency-{c} cells of {task} measured no request "
            "throughput (failed windows?), so no rates follow; rerun, or give the rates (--rates 1,2)"
        )
    measured = median(rps)
    rates = sorted({capacity.rounded(f * measured) for f in AUTO_FRACTIONS})
    entry = {
        "rates": rates,
        "capacity_req_s": measured,
        "concurrency": c,
        "repeats": len(rps),
        "how": f"auto: {', '.join(f'{f:g}' for f in AUTO_FRACTIONS)} × {run.plan.method}'s {measured:.3g} "
        f"req/s (median of {len(rps)} repeat(s) at concurrency {c}, this run)",
    }
    recorded = read_manifest(run.run_dir).get("load_rates") or {}
    recorded.setdefault(run.plan.method, {})[task] = entry
    update_manifest(run.run_dir, load_rates=recorded)
    return entry


def run_open_loop(run, task) -> None:
    """The task's rate cells, then (with --capacity) its capacity search; both recorded in summary["load"]."""
    opts = run.opts
    if not opts.open_loop:
        return
    rates, how = rates_for(run, task.name)
    _record(run, task.name, LoadTask.make(rates=rates, rates_from=how))  # before its cells: a failed one keeps it
    passed = {rate: _measure_rate(run, task, rate, probe=False) for rate in rates}
    if opts.capacity_share is not None:
        result = capacity.search(
            lambda rate: _measure_rate(run, task, rate, probe=True),
            passed,
            max_probes=opts.capacity_probes,
            resolution=opts.capacity_resolution,
        )
        entry = run.summary.load_figures.task_loads[task.name]
        _record(run, task.name, entry.updated(capacity={"share": opts.capacity_share, "slo": opts.slo, **result}))


def _record(run, task: str, entry: LoadTask) -> None:
    """summary["load"]["tasks"][task] = entry, summary["load"] made with the run's arrival setting on first use."""
    opts = run.opts
    load = run.summary.load or Load.make(
        burstiness=opts.burstiness, max_concurrency=opts.rates_max_concurrency, tasks={}
    )
    run.summary = run.summary.updated(load=load.updated(tasks={**load.task_loads, task: entry}))


def _measure_rate(run, task, rate: float, *, probe: bool) -> bool:
    """Every repeat of one rate; whether the rate meets the SLO share (only asked with --capacity)."""
    opts, shares = run.opts, []
    for r in range(opts.repeats):
        kind = "capacity probe" if probe else "rate"
        run.console.print(f"  performance phase: {task.name} {kind} {rate:g} req/s repeat {r + 1}/{opts.repeats}")
        _, outcome = run.bench_cell(task, r, rate=rate, probe=probe)
        figures = goodput.figures(outcome.bench, opts.slo) if outcome.bench and not outcome.error else None
        shares.append((figures or {}).get("share"))
    return opts.capacity_share is not None and capacity.passes(shares, opts.capacity_share)
