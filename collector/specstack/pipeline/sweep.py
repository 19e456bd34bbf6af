"""Several method runs under one run id, strictly one after another, by one loop: `specstack sweep` (methods)
and `specstack sweep-k` (one method at several num_speculative_tokens, each K in its own folder
`<method>-k<K>`, its baseline first). Finished results are kept and skipped unless --force; the run's report
is written at the end.
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console

from specstack import events
from specstack.config import methods
from specstack.config.serving import Runtime
from specstack.errors import UserError
from specstack.pipeline.serial import serially
from specstack.results import run_lock, sweep_time
from specstack.results.reader import good_result
from specstack.runs import prefix_cache
from specstack.runs.method_run import run_method
from specstack.runs.monitoring import Monitoring
from specstack.runs.next_server import NextServer
from specstack.runs.options import Options, plan_for
from specstack.server.runtime import Server, cancel_held, prestart_native

console = Console(stderr=True)
_SAFE = re.compile(r"^[A-Za-z0-9_.-]+$")


def run_all(
    opts: Options, entries: list[tuple[str, Options]], *, report: bool = True, port_may_be_held: bool = False
) -> list[dict]:
    """The sweep loop: each (result folder, options) in order (pipeline/serial.py, the loop make's sweep drives
    too), sharing one Monitoring (one window exporter; each method's Prometheus check overlaps the next server's
    start); a result already done in the run is kept, and a port not released stops the sweep. Returns the
    summaries in order.
    `port_may_be_held`: a server that just stopped may still hold the first port (reproduce, right after a run)."""
    began = time.time()
    run_dir = Path(opts.results_dir) / opts.run_id
    for _, one in entries:  # eagle3 or mtp on a set without their models fails before any server starts
        methods.check_model_set(one.method, one.model_set)
    prefix_cache.check_same_setting(opts.run_id, run_dir, opts.prefix_caching)  # before any method is skipped
    started = port_may_be_held  # once a server stopped, the next start waits (bounded) for its port
    pending: Server | None = None  # the next method's server, started held (runs/next_server.py)
    ran: list[tuple[str, dict]] = []  # (result folder, summary) of each method this loop ran, not kept
    events.emit("sweep.start", methods=[name for name, _ in entries])
    # one harness per run: held from before the first skip decision to the seal (each method takes it again)
    with run_lock.held(run_dir):
        with Monitoring.for_options(opts) as monitoring:

            def finished(entry: tuple[str, Options]) -> dict | None:
                name = entry[0]
                done = None if opts.force else good_result(run_dir, name)
                if done is not None:
                    console.print(f"[dim]{name}: already done in run {opts.run_id}, skipped (--force reruns it)[/]")
                    events.emit("method.skip", method=name, reason="already done in this run")
                return done

            def step(i: int, entry: tuple[str, Options]) -> dict:
                nonlocal started, pending
                one = dataclasses.replace(
                    entry[1],
                    port_wait=opts.port_release_timeout if started and opts.runtime == Runtime.NATIVE else 0.0,
                )
                # this method's server, if the method before started it held; the next's, as this one starts
                mine, pending = pending, None
                following = NextServer(lambda: held_next(opts, run_dir, entries[i + 1 :]))
                try:
                    summary, _ = run_method(
                        one,
                        index=i + 1,
                        total=len(entries),
                        monitoring=monitoring,
                        held=mine,
                        next_server=following if opts.runtime == Runtime.NATIVE else None,
                    )
                finally:
                    pending = following.server
                started = True
                ran.append((entry[0], summary))
                return summary

            def blocked(entry: tuple[str, Options], summary: dict, rest: Sequence[tuple[str, Options]]) -> bool:
                stop_if_port_blocked(summary, entry[0], [n for n, _ in rest])
                return False

            try:
                results = serially(entries, step, finished=finished, stop=blocked).results
            finally:
                if pending is not None:
                    cancel_held(pending)  # a sweep that stopped early: nothing of it is left
        events.emit("sweep.end")
        if ran and run_dir.is_dir():  # its time outside every method, for the time breakdown (before the report)
            sweep_time.record(run_dir, began=began, methods_ended=time.time(), ran=ran)
        if report:
            from specstack.report.build import write_report  # pandas and matplotlib only when a report is written

            console.print(f"report: {write_report(run_dir)}")
        if run_dir.is_dir():  # the tables saved and every file of the run under SHA256SUMS (`specstack verify RUN`)
            from specstack.report.console_table import seal_run

            seal_run(run_dir)
    return results


def held_next(opts: Options, run_dir: Path, rest: Sequence[tuple[str, Options]]) -> Server | None:
    """The server of the next method this sweep will run (one whose result is not kept), started held."""
    for name, one in rest:
        if not opts.force and good_result(run_dir, name) is not None:
            continue  # kept, not run (finished() above)
        return prestart_native(plan_for(one))
    return None


def stop_if_port_blocked(summary: dict, name: str, rest: list[str]) -> None:
    """Every later method would meet the same busy port: stop the sweep instead of failing each in turn."""
    if summary.get("error_type") == "PortNotReleased":
        not_run = f" (not run: {', '.join(rest)})" if rest else ""
        raise UserError(f"sweep stopped at {name}{not_run}: {summary['error']}")


def sweep(opts: Options, method_names: list[str], *, report: bool = True) -> list[dict]:
    """Methods one after another under one run id, then the comparison report of the whole run."""
    cfg = methods.load()
    method_names = [methods.resolve_method(cfg, n) for n in method_names]  # a typo fails before any server starts
    entries = [
        (
            name,
            dataclasses.replace(
                opts, method=name, spec_override=opts.spec_override if methods.is_speculative(name) else None
            ),
        )  # K means nothing to plain decode
        for name in method_names
    ]
    if opts.replicate == "sessions":
        entries = session_entries(entries, opts.repeats)
    elif opts.turns > 1 or opts.rates_auto:
        # turn 2 replays the baseline's turn-1 answers, --rates auto its rates: it writes them before its methods read
        entries = sorted(entries, key=lambda e: methods.baseline_of(e[0]) is not None)
    return run_all(opts, entries, report=report)


def session_name(method: str, session: int) -> str:
    return f"{method}-s{session}"


def session_entries(entries: list[tuple[str, Options]], sessions: int) -> list[tuple[str, Options]]:
    """--replicate sessions: every repeat is a server session of its own, and the sessions interleave in an ABBA
    design: round 1 runs baselines first, then the methods (B M); round 2 the same sessions in reverse (M B); and
    so on. A drift of the machine over the sweep then hits a method and its baseline alike, and neither side
    always runs first (a steady drift favours the side that runs first in B M B M). The manifest's `methods`
    lists the sessions in the order they ran. Each session runs one bench repeat per cell."""
    ordered = sorted(entries, key=lambda e: methods.baseline_of(e[0]) is not None)  # stable: baselines first
    return [
        (
            session_name(name, s),
            dataclasses.replace(one, bundle_name=session_name(name, s), repeats=1, session=s, sessions=sessions),
        )
        for s in range(1, sessions + 1)
        for name, one in (ordered if s % 2 else ordered[::-1])
    ]


# --- sweep-k -----------------------------------------------------------------------------------------


def bundle_name(method: str, k: int) -> str:
    return f"{method}-k{k}"


def parse_ks(text: str) -> list[int]:
    try:
        ks = [int(x) for x in str(text).split(",") if x.strip()]
    except ValueError:
        raise UserError(f"--k expects comma-separated positive integers, got {text!r}") from None
    if not ks or any(k <= 0 for k in ks):
        raise UserError(f"--k expects comma-separated positive integers, got {text!r}")
    if len(set(ks)) != len(ks):
        raise UserError(f"--k lists a value twice: {text!r}")
    return sorted(ks)


def plan_runs(opts: Options, ks: list[int]) -> list[tuple[str, dict]]:
    """(folder name, speculative override) per K; the user's own --spec-override keys are kept."""
    return [(bundle_name(opts.method, k), {**(opts.spec_override or {}), "num_speculative_tokens": k}) for k in ks]


def sweep_k(
    opts: Options, ks: list[int], *, with_baseline: bool = True, report: bool = True, per_load: bool = False
) -> list[dict]:
    """The method's baseline (unless present or disabled), then every K variant; the report's "K sweep"
    section plots TPOT and mean acceptance length against K and marks where the gain stops. `per_load`
    (--k-per-load): then the best K per concurrency band, derived from these cells (figures/k_per_load.py), run
    as one more folder `<method>-kload` when it differs between bands."""
    if per_load:
        check_per_load(opts)
    if not methods.is_speculative(opts.method):
        raise UserError(f"{opts.method!r} has no speculative config; sweep-k needs a speculative method")
    if opts.replicate != "repeats":
        raise UserError("sweep-k runs its repeats in one session per K; --replicate sessions is for sweep")
    if not _SAFE.match(opts.method):
        raise UserError(f"method name {opts.method!r} cannot be used in a folder name")
    entries = []
    base = methods.baseline_of(opts.method)
    if with_baseline and base:
        entries.append((base, dataclasses.replace(opts, method=base, spec_override=None)))
    entries += [
        (name, dataclasses.replace(opts, spec_override=override, bundle_name=name))
        for name, override in plan_runs(opts, ks)
    ]
    results = run_all(opts, entries, report=report and not per_load)
    return results + (run_schedule(opts, report=report) if per_load else [])


def schedule_name(method: str) -> str:
    return f"{method}-kload"


def check_per_load(opts: Options) -> None:
    from specstack.figures.k_per_load import MIN_RUNS

    if opts.repeats < MIN_RUNS:
        raise UserError(
            f"--k-per-load needs --repeats {MIN_RUNS} or more: its stability gate reads the spread "
            f"of the repeats (vLLM tune_speculative_k's --min-runs), got --repeats {opts.repeats}"
        )
    if 1 not in opts.concurrencies or len(set(opts.concurrencies)) < 2:
        raise UserError(
            "--k-per-load needs --concurrency 1 and at least one more (e.g. --concurrency 1,4): a "
            f"schedule starts at batch size 1 and picks a K per load, got {list(opts.concurrencies)}"
        )


def run_schedule(opts: Options, *, report: bool) -> list[dict]:
    """The schedule derived from the run's own cells, run as `<method>-kload` (vLLM 0.32.0's speculative config
    `num_speculative_tokens_per_batch_size`) unless it is one K at every load; then the report."""
    from specstack.figures import k_per_load as kpl
    from specstack.report.ksweep import schedule_for

    run_dir = Path(opts.results_dir) / opts.run_id
    sched, verdict = schedule_for(run_dir, opts.method)
    events.emit("k_per_load.schedule", method=opts.method, schedule=sched, verdict=verdict)
    if sched is None or not kpl.runnable(sched):
        console.print(f"K per load: {verdict}; no schedule run")
        entries = []
    else:
        name = schedule_name(opts.method)
        console.print(f"K per load: num_speculative_tokens_per_batch_size={sched}, run as {name}")
        override = {**(opts.spec_override or {}), **kpl.spec_override(sched)}
        entries = [(name, dataclasses.replace(opts, bundle_name=name, spec_override=override))]
    return run_all(opts, entries, report=report, port_may_be_held=True)
