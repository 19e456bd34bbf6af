"""The comparison report of one run bundle (`specstack report RUN_DIR_OR_ID`).

Writes into the run folder: `report.md`, a self-contained `report.html` (plots embedded as base64 PNG),
`report/*.png` and tidy tables `report/tables/*.csv|parquet`. Every figure is computed from the bundle alone:
each method's summary.json, its raw `vllm bench serve` JSON files and its acceptance JSONL files. Methods
published as `<method>.failed-<time>/` are listed as failed and never used as data.

Per task and concurrency each method is compared with the baseline of the same target (`baseline_method` in
its summary). Definitions (also printed at the end of the report):
- TPOT/ITL/TTFT/E2EL of a cell = the bench percentile of that repeat; over repeats the report shows the median.
- TPOT speedup = median over repeats of baseline p50 TPOT / median over repeats of method p50 TPOT.
- Throughput speedup = median method output tok/s / median baseline output tok/s.
- 95 % interval: percentile bootstrap over repeats (figures.stats.bootstrap_ratio, fixed seed).
- Output equality uses only the acceptance phase (greedy, no stop strings), never the fixed-length perf outputs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from specstack.figures import stats as st
from specstack.report import crosscheck, findings, load, load_view, plots, sections
from specstack.report.acceptance import acceptance_rows, category_rows, sampled_rows, turn_rows
from specstack.report.cells import bench_cells
from specstack.report.contents import Report
from specstack.report.equality import Tokenizers, equality_rows
from specstack.report.guards import guard_rows
from specstack.report.ksweep import k_per_load_rows, ksweep_rows
from specstack.report.loops import loop_rows
from specstack.report.lossless import lossless_rows
from specstack.report.prefix_cache import prefix_cache_rows
from specstack.report.render import render_html, render_markdown, title_of
from specstack.report.rows import MethodRow
from specstack.report.speed import crossover_rows, speed_rows
from specstack.report.start_costs import cost_rows
from specstack.report.tables import table_bytes
from specstack.report.time_breakdown import breakdown_rows
from specstack.results import archive, layout
from specstack.results.files import atomic_write_bytes, atomic_write_text
from specstack.results.reader import EAGER_NOTE, RunData, load_run
from specstack.results.summary import PrometheusView, Server, Summary, given


def method_rows(run: RunData) -> list[MethodRow]:
    rows: list[MethodRow] = []
    for md in run.methods.values():
        server = md.record.server_facts
        base = run.methods.get(md.baseline or "")
        base_kv = base.record.server_facts.kv_cache_tokens if base else None
        rows.append(
            {
                "method": md.name,
                "label": md.display_name,
                "status": "ok",
                "baseline": md.baseline,
                "comparable": md.comparable,
                "server_contradicted": bool(md.server_contradictions),
                "server_contradictions": "; ".join(md.server_contradictions) or None,
                "k": md.k,
                "speculative_config": json.dumps(md.record.speculative_config, sort_keys=True)
                if md.speculative
                else None,
                "spec_override": json.dumps(md.record.spec_override, sort_keys=True)
                if md.record.spec_override
                else None,
                "target": server.target,
                "model_runner": server.model_runner,
                "model_runner_basis": _basis(server, "model_runner"),
                "async_scheduling": server.async_scheduling,
                "async_scheduling_basis": _basis(server, "async_scheduling"),
                "kv_cache_tokens": server.kv_cache_tokens,
                "kv_cache_loss": st.kv_loss(server.kv_cache_tokens, base_kv) if md.baseline else None,
                "crosscheck_ok": md.record.crosscheck.ok if md.record.crosscheck else None,
                "crosscheck_kinds": crosscheck.label(md.record),
                "prometheus_view": _prometheus_view(md.record),
                "error": None,
                "folder": md.path.name,
            }
        )
    for f in run.failed:
        rows.append(
            {
                "method": f.name,
                "label": f.name,
                "status": "failed (superseded by a later ok run)" if f.superseded else "failed",
                "baseline": None,
                "comparable": None,
                "server_contradicted": None,
                "server_contradictions": None,
                "k": None,
                "speculative_config": None,
                "spec_override": None,
                "target": None,
                "model_runner": None,
                "model_runner_basis": None,
                "async_scheduling": None,
                "async_scheduling_basis": None,
                "kv_cache_tokens": None,
                "kv_cache_loss": None,
                "crosscheck_ok": None,
                "crosscheck_kinds": None,
                "prometheus_view": None,
                "error": f.error,
                "folder": f.path.name if f.path else None,
            }
        )
    return rows


def _basis(server: Server, fact: str) -> str | None:
    """How the server fact is known (server/provenance.py: observed, inferred, asked); None: not recorded."""
    if getattr(server, fact) is None:
        return None
    return server.basis(fact)


def build(
    run_dir: Path, tokenizers: Tokenizers | None = None, with_plots: bool = True, tokenizer: str | None = None
) -> Report:
    """Every table and plot of the report. `tokenizer` (folder or hub id) replaces the target recorded in the
    summaries for output equality."""
    run = load_run(run_dir)
    cells = [c for md in run.methods.values() for t in run.tasks for c in bench_cells(md, t)]
    speed = speed_rows(run)
    acc, positions, hist = acceptance_rows(run)
    tokenizers = tokenizers or Tokenizers()  # one for equality and the guards: each target loaded once
    eq, eq_summary = equality_rows(run, tokenizers, tokenizer)
    report = Report(
        run=run,
        methods=method_rows(run),
        cells=cells,
        speed=speed,
        crossover=crossover_rows(speed),
        acceptance=acc,
        positions=positions,
        histogram=hist,
        equality=eq,
        equality_summary=eq_summary,
        ksweep=ksweep_rows(run, speed),
        sampled=sampled_rows(run),
        lossless=lossless_rows(run),
        categories=category_rows(run),
        prefix_cache=prefix_cache_rows(run),
        turns=turn_rows(run),
        k_per_load=k_per_load_rows(run),
    )
    report.rates = load.rate_rows(run)
    report.rate_crossover = load.rate_crossover_rows(report.rates)
    report.frontier = load.frontier_rows(speed, report.rates)
    report.capacity = load.capacity_rows(run)
    report.summary_findings = findings.rows(run.findings)
    report.loops = loop_rows(run)
    report.guards = guard_rows(run, tokenizers, tokenizer)
    report.time_breakdown = breakdown_rows(run)
    report.start_costs = cost_rows(run)
    if with_plots:
        with plots.stamped(EAGER_NOTE if run.eager_smoke else None, report.plot_captions):
            plots.make_all(report)
            load_view.make_plots(report)
    return report


def _prometheus_view(summary: Summary) -> str | None:
    """Which of the two views a method's figures rest on: the collector's direct /metrics diff always;
    Prometheus's only when the run was given one, and then whether it answered."""
    view = summary.prometheus_view or PrometheusView.from_json({})
    status = given(view, "status", "not collected")
    if status == "not collected":
        return "not collected (direct diff only)"
    if status == "pending":
        return "not checked (the run stopped before the check); direct diff stands"
    missing = view.missing
    if not missing:
        return "ok"
    return "MISSING for " + ", ".join(f"{t} ({r})" for t, r in missing.items()) + "; direct diff stands"


def write_report(run_dir: Path, tokenizers: Tokenizers | None = None, tokenizer: str | None = None) -> Path:
    """Write report.md, report.html, report/*.png and report/tables/*.csv|parquet into the run folder.
    Returns the path of report.md."""
    run_dir = Path(run_dir)
    return archive.reseal_if_intact(run_dir, lambda: _write_report(run_dir, tokenizers, tokenizer))


def _write_report(run_dir: Path, tokenizers: Tokenizers | None, tokenizer: str | None) -> Path:
    rep = build(run_dir, tokenizers, tokenizer=tokenizer)
    for name, data in rep.plots.items():
        atomic_write_bytes(run_dir / name, data)
    for name, rows in rep.tables().items():
        csv, parquet = table_bytes(name, rows)
        atomic_write_bytes(run_dir / layout.report_table(name, "csv"), csv)
        atomic_write_bytes(run_dir / layout.report_table(name, "parquet"), parquet)
    bl = sections.blocks(rep)
    atomic_write_text(run_dir / layout.REPORT_HTML, render_html(bl, rep.plots, title_of(bl)))
    return atomic_write_text(run_dir / layout.REPORT_MD, render_markdown(bl))


def gain_summary(run_dir: Path) -> list[dict[str, Any]]:
    """Where the gain stops, per method family, task and concurrency (from the report's K sweep table)."""
    rep = build(run_dir, with_plots=False)
    seen, out = set(), []
    for r in rep.ksweep:
        key = (r["family"], r["task"], r["concurrency"])
        if key not in seen:
            seen.add(key)
            out.append(
                {
                    "method": r["family"],
                    "task": r["task"],
                    "concurrency": r["concurrency"],
                    "gain_stops_at_k": r["gain_stops_at_k"],
                }
            )
    return out
