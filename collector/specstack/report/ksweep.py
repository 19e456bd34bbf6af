"""The K sweep section: the variants `<method>-k<K>` of one method family side by side, the smallest K
beyond which TPOT stops improving, and the best K per load (figures/k_per_load.py) with the run of its schedule
(`<method>-kload`, sweep-k --k-per-load) beside the best fixed K and the baseline."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from specstack.figures import k_per_load as kpl
from specstack.figures import stats as st
from specstack.report.cells import bench_cells
from specstack.report.format import num, pct, times
from specstack.report.render import Block
from specstack.report.rows import KPerLoadRow, KSweepRow, SpeedRow
from specstack.results.reader import MethodData, RunData

if TYPE_CHECKING:
    from specstack.report.contents import Report

_K_SUFFIX = re.compile(r"^(?P<base>.+)-k(?P<k>\d+)$")


def k_family(md: MethodData) -> str:
    """The method a K variant belongs to: summary["base_method"] when run.py records it, else the folder
    name without a `-k<K>` suffix."""
    if md.record.base_method:
        return md.record.base_method
    m = _K_SUFFIX.match(md.name)
    return m.group("base") if m else md.name


def schedule_of(md: MethodData) -> list[list[int]] | None:
    """The per-batch-size K schedule a method ran with (sweep-k --k-per-load's `<method>-kload`), else None."""
    schedule: list[list[int]] | None = (md.record.speculative_config or {}).get("num_speculative_tokens_per_batch_size")
    return schedule


def k_families(run: RunData) -> dict[str, dict[int, MethodData]]:
    """family -> K -> its folder, for the fixed-K variants (a schedule's run is no K of its own)."""
    families: dict[str, dict[int, MethodData]] = {}
    for md in run.methods.values():
        if not md.speculative or md.k is None or schedule_of(md):
            continue
        fam = families.setdefault(k_family(md), {})
        if md.k not in fam or _K_SUFFIX.match(md.name):  # prefer the explicit <method>-k<K> folder
            fam[md.k] = md
    return families


def ksweep_rows(run: RunData, speed: list[SpeedRow]) -> list[KSweepRow]:
    families = k_families(run)
    rows: list[KSweepRow] = []
    for fam, by_k in sorted(families.items()):
        if len(by_k) < 2:
            continue
        for task in run.tasks:
            for c in sorted({r["concurrency"] for r in speed if r["method"] in {m.name for m in by_k.values()}}):
                tpot_by_k = {}
                entries: list[KSweepRow] = []
                for k, md in sorted(by_k.items()):
                    r = next(
                        (x for x in speed if x["method"] == md.name and x["task"] == task and x["concurrency"] == c),
                        None,
                    )
                    if r is None:
                        continue
                    acc = md.figures(task)
                    tpot_by_k[k] = r["tpot_p50_ms"]
                    entries.append(
                        {
                            "family": fam,
                            "task": task,
                            "concurrency": c,
                            "k": k,
                            "method": md.name,
                            "tpot_p50_ms": r["tpot_p50_ms"],
                            "baseline_tpot_p50_ms": r["baseline_tpot_p50_ms"],
                            "tpot_speedup": r["tpot_speedup"],
                            "output_throughput": r["output_throughput"],
                            "bench_acceptance_length": r["bench_acceptance_length"],
                            "acceptance_phase_mean_length": acc.mean_acceptance_length if acc.drafted else None,
                            "spec_override": json.dumps(md.record.spec_override, sort_keys=True),
                            "gain_stops_at_k": None,  # set below, once every K of the concurrency is in
                            "gain_note": None,
                        }
                    )
                if len(tpot_by_k) < 2:
                    continue
                stop = st.gain_stop(tpot_by_k)
                note = (
                    "best TPOT at the largest K tested: no plateau yet, try larger K"
                    if stop == max(tpot_by_k)
                    else f"K above {stop} bought < {st.GAIN_TOLERANCE:.0%} TPOT"
                )
                for e in entries:
                    e["gain_stops_at_k"] = stop
                    e["gain_note"] = note
                rows.extend(entries)
    return rows


# --- K per load ----------------------------------------------------------------------------------------

ALL_TASKS = "all tasks"


def _cells(md: MethodData, task: str, k: int) -> list[dict[str, Any]]:
    return [
        {
            "k": k,
            "concurrency": c["concurrency"],
            "repeat": c["repeat"],
            "tokens": c["total_output_tokens"],
            "duration": c["duration_s"],
            "output_throughput": c["output_throughput"],
            "ok": c["status"] == "ok" and not c["failed"],
        }
        for c in bench_cells(md, task)
    ]


def _pooled(per_task: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The run's tasks as one workload (what one schedule serves): per (K, concurrency, repeat), the output
    tokens of every task's cell over their summed bench durations; a repeat missing or failed in any task fails."""
    groups: dict[tuple[int, int, int], list[dict[str, Any]]] = {}
    for cells in per_task:
        for c in cells:
            groups.setdefault((c["k"], c["concurrency"], c["repeat"]), []).append(c)
    out = []
    for (k, conc, r), g in sorted(groups.items()):
        ok = len(g) == len(per_task) and all(x["ok"] and x["tokens"] and x["duration"] for x in g)
        out.append(
            {
                "k": k,
                "concurrency": conc,
                "repeat": r,
                "ok": ok,
                "output_throughput": sum(x["tokens"] for x in g) / sum(x["duration"] for x in g) if ok else None,
            }
        )
    return out


def _task_cells(md: MethodData, k: int, task: str, tasks: list[str]) -> list[dict[str, Any]]:
    return _pooled([_cells(md, t, k) for t in tasks]) if task == ALL_TASKS else _cells(md, task, k)


def k_per_load_rows(run: RunData, *, every_family: bool = False) -> list[KPerLoadRow]:
    """Per method family and task (and, with several tasks, the tasks pooled: "all tasks", the workload a
    schedule run serves): the best K per concurrency band with its evidence, the schedule, the best fixed K, and
    the schedule's own run when the run holds one. A family with one K and no schedule run is a method of a
    sweep, not a K sweep: left out unless `every_family`."""
    rows: list[KPerLoadRow] = []
    tasks = run.tasks
    for fam, by_k in sorted(k_families(run).items()):
        base = run.methods.get(next(iter(by_k.values())).baseline or "")
        if base is None:
            continue
        runs = [md for md in run.methods.values() if schedule_of(md) and k_family(md) == fam]
        if len(by_k) < 2 and not runs and not every_family:
            continue
        for task in tasks + ([ALL_TASKS] if len(tasks) > 1 else []):
            cells = [c for k, md in [(0, base), *sorted(by_k.items())] for c in _task_cells(md, k, task, tasks)]
            rows += _family_rows(fam, task, cells, runs, partial(_task_cells, k=-1, task=task, tasks=tasks))
    return rows


def _family_rows(
    fam: str,
    task: str,
    cells: list[dict[str, Any]],
    runs: list[MethodData],
    cells_of: Callable[[MethodData], list[dict[str, Any]]],
) -> list[KPerLoadRow]:
    bands = kpl.bands(cells)
    sched, why = kpl.schedule(bands)
    fixed = kpl.best_fixed_k(bands)
    ran = next((md for md in runs if schedule_of(md) == sched), runs[0] if runs else None)
    ran_by_c = {c: by_k[-1] for c, by_k in kpl.candidates(cells_of(ran)).items()} if ran else {}
    rows: list[KPerLoadRow] = []
    for b in bands:
        base = next((x for x in b["candidates"] if x["k"] == 0), None)
        fixed_cell = next((x for x in b["candidates"] if x["k"] == fixed), None)
        mine = ran_by_c.get(b["concurrency"])
        rows.append(
            {
                "family": fam,
                "task": task,
                "concurrency": b["concurrency"],
                "band": f"{b['band'][0]}–{b['band'][1]}",
                "k": b["k"],
                "ties": ", ".join(map(str, b["ties"])) or None,
                "why_no_k": b["why_none"],
                "median_tok_s": b["median_tok_s"],
                "speedup": b["speedup"],
                "relative_mad": b["relative_mad"],
                "candidates": "; ".join(
                    f"K={x['k']} {num(x['median_tok_s'])} tok/s {times(x['speedup'])} "
                    f"MAD {pct(x['relative_mad'])} {x['gate']}"
                    for x in b["candidates"]
                ),
                "schedule": json.dumps(sched) if sched else None,
                "schedule_verdict": why or kpl.verdict(sched),
                "best_fixed_k": fixed,
                "best_fixed_k_speedup": fixed_cell["speedup"] if fixed_cell else None,
                "schedule_method": ran.name if ran else None,
                "schedule_ran": json.dumps(schedule_of(ran)) if ran else None,
                "schedule_tok_s": mine.median if mine else None,
                "schedule_speedup": mine.median / base["median_tok_s"]
                if mine and base and base["median_tok_s"]
                else None,
            }
        )
    return rows


def k_per_load_section(rep: Report) -> list[Block]:
    """The "K per load" table under the K sweep, and one sentence per family and task saying what became of
    the schedule: run, worth running, or nothing to run."""
    rows = rep.k_per_load
    if not rows:
        return []
    heading: Literal["h2", "h3"] = (
        "h3" if rep.ksweep else "h2"
    )  # under the K sweep's table, or alone when one K was swept
    out: list[Block] = [
        (heading, "K per load"),
        (
            "table",
            [
                "method family",
                "task",
                "batch sizes",
                "best K",
                "ties",
                "tok/s",
                "vs baseline",
                "rel. MAD",
                "candidates (K: median tok/s, speedup, relative MAD, gate)",
                "best fixed K",
                "schedule run",
            ],
            [
                [
                    r["family"],
                    r["task"],
                    r["band"],
                    num(r["k"]) if r["k"] is not None else f"n/a: {r['why_no_k']}",
                    r["ties"] or "",
                    num(r["median_tok_s"]),
                    times(r["speedup"]),
                    pct(r["relative_mad"]),
                    r["candidates"],
                    f"K={r['best_fixed_k']} {times(r['best_fixed_k_speedup'])}" if r["best_fixed_k"] else "n/a",
                    f"{r['schedule_method']} {times(r['schedule_speedup'])}" if r["schedule_method"] else "not run",
                ]
                for r in rows
            ],
        ),
    ]
    seen: dict[tuple[str, str], KPerLoadRow] = {}
    for r in rows:
        seen.setdefault((r["family"], r["task"]), r)
    out.append(("ul", [f"{fam}, {task}: {_schedule_sentence(r)}" for (fam, task), r in seen.items()]))
    return out


def _schedule_sentence(r: KPerLoadRow) -> str:
    ran = (
        (
            f" The run's schedule {r['schedule_ran']} ran on vLLM 0.32.0 as {r['schedule_method']}: its speedup "
            f"per band is in the table beside the best fixed K's and the baseline's."
        )
        if r["schedule_method"]
        else ""
    )
    if not r["schedule"]:
        return f"no schedule: {r['schedule_verdict']}.{ran}"
    sched = json.loads(r["schedule"])
    what = f"schedule num_speculative_tokens_per_batch_size={r['schedule']}"
    if r["schedule_method"]:
        same = "this schedule" if r["schedule_ran"] == r["schedule"] else "another schedule"
        return f"{what} ({same} ran).{ran}"
    if kpl.runnable(sched):
        override = json.dumps(kpl.spec_override(sched))
        return (
            f"{what}: vLLM 0.32.0 accepts it (speculative config); not run here — `specstack sweep-k "
            f"--k-per-load` runs it, or `--spec-override '{override}'`."
        )
    return f"{what}: {r['schedule_verdict']}, nothing to run."


def schedule_for(run_dir: Path, family: str) -> tuple[list[list[int]] | None, str]:
    """The schedule of one family over the whole workload (the tasks pooled when the run has several), and what
    it means; what `sweep-k --k-per-load` runs."""
    from specstack.results.reader import load_run

    run = load_run(run_dir)
    task = ALL_TASKS if len(run.tasks) > 1 else (run.tasks[0] if run.tasks else None)
    rows = k_per_load_rows(run, every_family=True)
    row = next((r for r in rows if r["family"] == family and r["task"] == task), None)
    if row is None:
        return None, f"no K sweep of {family} with its baseline in {run_dir}"
    return (json.loads(row["schedule"]) if row["schedule"] else None), row["schedule_verdict"]
