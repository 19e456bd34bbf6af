"""`specstack report RUN_DIR_OR_ID`: the comparison report of one run bundle.

Writes into the run folder: `report.md`, a self-contained `report.html` (plots embedded as base64 PNG),
`report/*.png` and tidy tables `report/tables/*.csv|parquet`. Every figure is computed from the bundle alone:
each method's summary.json, its raw `vllm bench serve` JSON files and its acceptance JSONL files. Methods
published as `<method>.failed-<time>/` are listed as failed and never used as data.

Per task and concurrency each method is compared with the baseline of the same target (`baseline_method` in
its summary). Definitions (also printed at the end of the report):
- TPOT/ITL/TTFT/E2EL of a cell = the bench percentile of that repeat; over repeats the report shows the median.
- TPOT speedup = median over repeats of baseline p50 TPOT / median over repeats of method p50 TPOT.
- Throughput speedup = median method output tok/s / median baseline output tok/s.
- 95 % interval: percentile bootstrap over repeats (report_stats.bootstrap_ratio, fixed seed).
- Output equality uses only the acceptance phase (greedy, natural stops), never the fixed-length perf outputs.
"""
from __future__ import annotations

import argparse
import base64
import html
import io
import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from . import report_plots as plots
from . import report_stats as st
from .bundle import atomic_write_bytes, atomic_write_text, read_summary
from .errors import UserError
from .phases import request_fields

REPORT_DIR = "report"
METRICS = ("tpot", "itl", "ttft", "e2el")
PERCENTILES = (50, 95, 99)
PREEMPTIONS = "vllm:num_preemptions"
_K_SUFFIX = re.compile(r"^(?P<base>.+)-k(?P<k>\d+)$")


# --- loading ------------------------------------------------------------------------------------------

@dataclass
class MethodData:
    name: str              # folder name = summary["method"]
    path: Path
    summary: dict

    @property
    def baseline(self) -> str | None:
        return self.summary.get("baseline_method")

    @property
    def speculative(self) -> bool:
        return self.summary.get("speculative_config") is not None

    @property
    def comparable(self) -> bool:
        return self.summary.get("comparable", True) is not False

    @property
    def k(self) -> int | None:
        return (self.summary.get("speculative_config") or {}).get("num_speculative_tokens")

    @property
    def tasks(self) -> dict:
        return self.summary.get("tasks") or {}


@dataclass
class FailedRun:
    name: str
    path: Path | None
    error: str | None
    superseded: bool = False   # a successful result of the same method exists beside it


@dataclass
class RunData:
    run_dir: Path
    manifest: dict
    methods: dict[str, MethodData]
    failed: list[FailedRun]
    warnings: list[str] = field(default_factory=list)

    @property
    def tasks(self) -> list[str]:
        seen = {t for m in self.methods.values() for t in m.tasks}
        order = list((self.manifest.get("workload") or {}).get("tasks") or [])
        return [t for t in order if t in seen] + sorted(seen - set(order))


def resolve_run_dir(arg: str | Path, results_dir: Path | None = None) -> Path:
    """A run folder given directly, or a run id under --results (default: $SPECSTACK_RESULTS or results/)."""
    p = Path(arg)
    if p.is_dir() and ((p / "manifest.json").exists() or any(p.glob("*/summary.json"))):
        return p
    base = Path(results_dir or os.environ.get("SPECSTACK_RESULTS", "results"))
    q = base / str(arg)
    if q.is_dir():
        return q
    raise UserError(f"no run folder {p} and no run {str(arg)!r} under {base}; pass the run folder or "
                    "--results DIR with the run id")


def load_run(run_dir: Path) -> RunData:
    run_dir = Path(run_dir)
    manifest_path = run_dir / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    methods: dict[str, MethodData] = {}
    failed: list[FailedRun] = []
    warnings: list[str] = []
    for d in sorted(p for p in run_dir.iterdir() if p.is_dir()):
        if d.name.startswith(".") or d.name in ("inputs", REPORT_DIR) or ".replaced-" in d.name:
            continue
        summary = read_summary(d)
        if summary is None:
            continue
        if ".failed-" in d.name:
            failed.append(FailedRun(summary.get("method") or d.name.split(".failed-")[0], d, summary.get("error")))
        elif summary.get("status") != "ok":
            failed.append(FailedRun(d.name, d, summary.get("error") or f"status {summary.get('status')!r}"))
        else:
            methods[d.name] = MethodData(d.name, d, summary)
    for f in failed:
        f.superseded = f.name in methods
    methods = _grouped(methods, list(manifest.get("methods") or {}))
    for name, entry in (manifest.get("methods") or {}).items():
        if entry.get("status") == "ok":
            folder = entry.get("dir") or name
            if folder not in methods:
                warnings.append(f"{name}: the manifest says ok but {run_dir / folder} has no good summary.json; "
                                "left out")
            continue
        if name in methods:
            warnings.append(f"{name}: the latest attempt failed ({entry.get('error')}); the report uses the "
                            f"earlier successful result in {name}/")
        elif not any(f.name == name for f in failed):
            failed.append(FailedRun(name, None, entry.get("error") or f"status {entry.get('status')!r}"))
    failed_names = {f.name for f in failed if not f.superseded}
    for md in methods.values():
        if md.baseline and md.baseline not in methods:
            why = "failed" if md.baseline in failed_names else "is not in this run"
            warnings.append(f"{md.name}: its baseline {md.baseline!r} {why}; no speed ratios and no output "
                            "equality for it")
    if not methods and not failed:
        raise UserError(f"{run_dir} holds no method results (no <method>/summary.json)")
    return RunData(run_dir, manifest, methods, failed, warnings)


def _grouped(methods: dict[str, MethodData], run_order: list[str]) -> dict[str, MethodData]:
    """Each baseline followed by the methods compared with it; run order (the manifest's) within a group."""
    def rank(name: str) -> tuple:
        return (run_order.index(name) if name in run_order else len(run_order), name)
    out: dict[str, MethodData] = {}
    for base in sorted((n for n, m in methods.items() if not m.baseline), key=rank):
        out[base] = methods[base]
        for n in sorted((n for n, m in methods.items() if m.baseline == base), key=rank):
            out[n] = methods[n]
    for n in sorted((n for n in methods if n not in out), key=rank):   # their baseline is not in the run
        out[n] = methods[n]
    return out


def _load_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None


def _counter(summary: dict, task: str, concurrency: int, repeat: int, name: str) -> float | None:
    for w in summary.get("windows") or []:
        if w.get("phase") == "bench" and w.get("task") == task and w.get("concurrency") == concurrency \
                and w.get("repeat") == repeat:
            return ((w.get("counters") or {}).get("counters") or {}).get(name)
    return None


# --- bench cells and speed --------------------------------------------------------------------------

def bench_cells(md: MethodData, task: str) -> list[dict]:
    """One row per bench repeat, read from the raw bench JSON (the summary's copy if the file is gone)."""
    rows = []
    for cell in (md.tasks.get(task) or {}).get("bench") or []:
        raw = _load_json(md.path / cell["file"]) if cell.get("file") else None
        src = raw if raw is not None else cell
        c, r = cell.get("concurrency"), cell.get("repeat")
        row = {"method": md.name, "task": task, "concurrency": c, "repeat": r, "status": cell.get("status"),
               "file": cell.get("file"), "source": "bench json" if raw is not None else "summary",
               "completed": src.get("completed"), "failed": src.get("failed"),
               "total_output_tokens": src.get("total_output_tokens"), "duration_s": src.get("duration"),
               "output_throughput": src.get("output_throughput")}
        for m in METRICS:
            row[f"mean_{m}_ms"] = src.get(f"mean_{m}_ms")
            for p in PERCENTILES:
                value = src.get(f"p{p}_{m}_ms")
                if value is None and p == 50:
                    value = src.get(f"median_{m}_ms")
                row[f"p{p}_{m}_ms"] = value
        row["spec_decode_acceptance_length"] = src.get("spec_decode_acceptance_length")
        rate = src.get("spec_decode_acceptance_rate")   # bench writes percent
        row["spec_decode_acceptance_rate"] = None if rate is None else rate / 100
        row["spec_decode_draft_tokens"] = src.get("spec_decode_draft_tokens")
        row["preemptions"] = _counter(md.summary, task, c, r, PREEMPTIONS)
        rows.append(row)
    return rows


def _by_concurrency(cells: list[dict]) -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = {}
    for cell in cells:
        out.setdefault(cell["concurrency"], []).append(cell)
    return out


def _ok(cells: list[dict]) -> list[dict]:
    return [c for c in cells if c["status"] == "ok"]


def _vals(cells: list[dict], key: str) -> list[float]:
    return [c[key] for c in cells if c.get(key) is not None]


def _sum(cells: list[dict], key: str) -> float | None:
    vals = _vals(cells, key)
    return sum(vals) if vals else None


def _itl_samples(cell: dict) -> int | None:
    """ITL gaps in one repeat, estimated: (output tokens - requests) / tokens per streamed chunk (the bench
    acceptance length; 1 without drafts). The raw JSON keeps no per-chunk list unless --save-detailed."""
    out, n = cell.get("total_output_tokens"), cell.get("completed")
    if out is None or not n:
        return None
    return int((out - n) / (cell.get("spec_decode_acceptance_length") or 1))


def speed_rows(run: RunData) -> list[dict]:
    rows = []
    for md in run.methods.values():
        base = run.methods.get(md.baseline or "")
        kv = (md.summary.get("server") or {}).get("kv_cache_tokens")
        base_kv = ((base.summary.get("server") or {}).get("kv_cache_tokens")) if base else None
        for task in run.tasks:
            mine = _by_concurrency(bench_cells(md, task))
            theirs = _by_concurrency(bench_cells(base, task)) if base else {}
            for c in sorted(mine):
                ok, bok = _ok(mine[c]), _ok(theirs.get(c, []))
                row = {"method": md.name, "baseline": md.baseline, "task": task, "concurrency": c,
                       "role": "spec" if md.baseline else "baseline", "comparable": md.comparable,
                       "repeats": len(ok), "baseline_repeats": len(bok), "cells_failed": len(mine[c]) - len(ok),
                       "output_throughput": st.median(_vals(ok, "output_throughput")),
                       "baseline_output_throughput": st.median(_vals(bok, "output_throughput"))}
                for m in METRICS:
                    for p in PERCENTILES:
                        row[f"{m}_p{p}_ms"] = st.median(_vals(ok, f"p{p}_{m}_ms"))
                row["baseline_tpot_p50_ms"] = st.median(_vals(bok, "p50_tpot_ms"))
                n_req = min(_vals(ok, "completed"), default=None)
                n_itl = min((x for x in (_itl_samples(c_) for c_ in ok) if x is not None), default=None)
                row["requests_per_repeat"] = n_req
                row["itl_samples_per_repeat_est"] = n_itl
                for m in METRICS:
                    n = n_itl if m == "itl" else n_req
                    for p in (95, 99):
                        row[f"{m}_p{p}_unstable"] = st.unstable(p, n)
                acc_len = st.median(_vals(ok, "spec_decode_acceptance_length"))
                row["bench_acceptance_length"] = acc_len
                row["bench_acceptance_rate"] = st.median(_vals(ok, "spec_decode_acceptance_rate"))
                note = []
                if md.baseline:
                    tpot = st.bootstrap_ratio(_vals(bok, "p50_tpot_ms"), _vals(ok, "p50_tpot_ms"))
                    tput = st.bootstrap_ratio(_vals(ok, "output_throughput"), _vals(bok, "output_throughput"))
                    if base is None:
                        note.append(f"baseline {md.baseline!r} missing or failed: no ratios")
                    elif not bok:
                        note.append(f"baseline has no concurrency-{c} cell")
                else:
                    tpot = tput = st.Interval(None, None, None, len(ok), len(ok))
                row.update(tpot_speedup=tpot.point, tpot_speedup_low=tpot.low, tpot_speedup_high=tpot.high,
                           tpot_verdict=tpot.verdict("faster", "slower") if md.baseline else "reference",
                           throughput_speedup=tput.point, throughput_speedup_low=tput.low,
                           throughput_speedup_high=tput.high,
                           throughput_verdict=tput.verdict("higher", "lower") if md.baseline else "reference")
                row["efficiency"] = st.efficiency(tpot.point, acc_len) if md.speculative else None
                row["preemptions"] = _sum(mine[c], "preemptions")
                row["failed_requests"] = _sum(mine[c], "failed")
                row["kv_cache_tokens"] = kv
                row["kv_cache_loss"] = st.kv_loss(kv, base_kv) if md.baseline else None
                if not md.comparable:
                    note.append("NOT COMPARABLE: synthetic rejection sampling")
                if md.speculative and acc_len is None and ok:
                    note.append("bench saw no drafts")
                row["note"] = "; ".join(note) or None
                rows.append(row)
    return rows


def crossover_rows(speed: list[dict]) -> list[dict]:
    rows = []
    keys = sorted({(r["method"], r["task"]) for r in speed if r["role"] == "spec"})
    for method, task in keys:
        mine = [r for r in speed if r["method"] == method and r["task"] == task]
        tpot = st.crossover({r["concurrency"]: r["tpot_speedup"] for r in mine},
                            {r["concurrency"]: r["tpot_speedup_low"] for r in mine})
        tput = st.crossover({r["concurrency"]: r["throughput_speedup"] for r in mine},
                            {r["concurrency"]: r["throughput_speedup_low"] for r in mine})
        rows.append({"method": method, "baseline": mine[0]["baseline"], "task": task,
                     "comparable": mine[0]["comparable"],
                     "tpot_kind": tpot["kind"], "tpot_crossover_concurrency": tpot["concurrency"],
                     "tpot_text": tpot["text"], "throughput_kind": tput["kind"],
                     "throughput_crossover_concurrency": tput["concurrency"], "throughput_text": tput["text"]})
    return rows


# --- acceptance --------------------------------------------------------------------------------------

def _acceptance_records(md: MethodData, task: str) -> list[dict]:
    path = md.path / "acceptance" / f"{task}.jsonl"
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        if line.strip():
            raw = json.loads(line)
            rec = request_fields(raw)
            rec["messages"] = (raw.get("request") or {}).get("messages")
            out.append(rec)
    return out


def acceptance_rows(run: RunData) -> tuple[list[dict], list[dict], list[dict]]:
    """(per method x task, per draft position, per histogram bucket). Acceptance phase only."""
    rows, positions, hist_rows = [], [], []
    for md in run.methods.values():
        for task in run.tasks:
            f = md.tasks.get(task)
            if f is None:
                continue
            drafts = f.get("num_draft_tokens")
            no_drafts = not drafts  # None (plain decode) or 0: the ratios are n/a, never 0 %
            hist = f.get("histogram") if not no_drafts else None
            per_pos = f.get("per_position") if not no_drafts else None
            records = _acceptance_records(md, task)
            rows.append({"method": md.name, "baseline": md.baseline, "task": task, "k": md.k,
                         "comparable": md.comparable,
                         "acceptance_rate": None if no_drafts else f.get("acceptance_rate"),
                         "mean_acceptance_length": None if no_drafts else f.get("mean_acceptance_length"),
                         "no_accept_share": None if no_drafts else f.get("no_accept_share"),
                         "num_spec_steps": f.get("num_spec_steps"), "num_draft_tokens": drafts,
                         "num_accepted_draft_tokens": f.get("num_accepted_draft_tokens"),
                         "histogram": None if hist is None else json.dumps(hist),
                         "per_position": None if per_pos is None else json.dumps([round(x, 6) for x in per_pos]),
                         "requests": f.get("requests"), "completion_tokens": f.get("completion_tokens"),
                         "failed_requests": sum(1 for r in records if r["error"]),
                         "finish_reasons": json.dumps(f.get("finish_reasons") or {}, sort_keys=True)})
            for p, rate in enumerate(per_pos or []):
                positions.append({"method": md.name, "task": task, "position": p, "rate": rate})
            total = sum(hist or [])
            for j, n in enumerate(hist or []):
                hist_rows.append({"method": md.name, "task": task, "accepted": j, "steps": n,
                                  "share": n / total if total else None})
    return rows, positions, hist_rows


# --- output equality ---------------------------------------------------------------------------------

class Tokenizers:
    """The target's tokenizer (transformers AutoTokenizer), loaded once per path; None + reason on failure."""

    def __init__(self):
        self._cache: dict[str, tuple[object | None, str | None]] = {}

    def get(self, path: str | None):
        if not path:
            return None, "no tokenizer path in the summary"
        if path not in self._cache and path.startswith(("/", ".", "~")) and not Path(path).expanduser().exists():
            self._cache[path] = (None, f"no folder {path} on this machine")
        if path not in self._cache:
            try:
                from transformers import AutoTokenizer
                self._cache[path] = (AutoTokenizer.from_pretrained(path), None)
            except Exception as e:  # noqa: BLE001 - any failure means: fall back to characters, and say so
                self._cache[path] = (None, f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}")
        return self._cache[path]


def tokenizer_path(md: MethodData) -> str | None:
    server = md.summary.get("server") or {}
    return server.get("root_model") or server.get("target")


def compare_texts(a: str, b: str, tokenizer=None) -> dict:
    """Equality and first divergence of two outputs; token index when a tokenizer is given."""
    if a == b:
        return {"equal": True, "first_token_divergence": None, "first_char_divergence": None}
    out = {"equal": False, "first_char_divergence": st.first_divergence(a, b), "first_token_divergence": None}
    if tokenizer is not None:
        out["first_token_divergence"] = st.first_divergence(tokenizer.encode(a, add_special_tokens=False),
                                                            tokenizer.encode(b, add_special_tokens=False))
    return out


def equality_rows(run: RunData, tokenizers: Tokenizers | None = None) -> tuple[list[dict], list[dict]]:
    tokenizers = tokenizers or Tokenizers()
    rows, summary = [], []
    for md in run.methods.values():
        if not md.baseline:
            continue
        base = run.methods.get(md.baseline)
        for task in run.tasks:
            if task not in md.tasks:
                continue
            s = {"method": md.name, "baseline": md.baseline, "task": task, "comparable": md.comparable,
                 "requests": 0, "compared": 0, "equal": 0, "equal_rate": None, "finish_reason_differs": 0,
                 "first_divergence_min": None, "first_divergence_median": None, "unit": None, "tokenizer": None,
                 "note": None}
            if base is None:
                s["note"] = f"baseline {md.baseline!r} missing or failed"
                summary.append(s)
                continue
            tok_path = tokenizer_path(base) or tokenizer_path(md)
            tok, tok_error = tokenizers.get(tok_path)
            s["unit"] = "token" if tok is not None else "character"
            s["tokenizer"] = tok_path if tok is not None else f"not loaded ({tok_error}); character index"
            theirs = {r["id"]: r for r in _acceptance_records(base, task)}
            divergences = []
            for a in _acceptance_records(md, task):
                b = theirs.get(a["id"])
                s["requests"] += 1
                row = {"method": md.name, "baseline": md.baseline, "task": task, "id": a["id"],
                       "equal": None, "first_token_divergence": None, "first_char_divergence": None,
                       "unit": s["unit"], "finish_reason": a["finish_reason"],
                       "baseline_finish_reason": b["finish_reason"] if b else None,
                       "completion_tokens": (a["usage"] or {}).get("completion_tokens"),
                       "baseline_completion_tokens": ((b or {}).get("usage") or {}).get("completion_tokens"),
                       "note": None}
                if b is None:
                    row["note"] = "no baseline response with this id"
                elif a["error"] or b["error"]:
                    row["note"] = "request failed: " + "; ".join(x for x in (a["error"], b["error"]) if x)
                elif a["text"] is None or b["text"] is None:
                    row["note"] = "no text in a response"
                elif a["messages"] != b["messages"]:
                    row["note"] = "different prompts under the same id; not compared"
                else:
                    row.update(compare_texts(a["text"], b["text"], tok))
                    s["compared"] += 1
                    s["equal"] += row["equal"]
                    s["finish_reason_differs"] += a["finish_reason"] != b["finish_reason"]
                    idx = row["first_token_divergence"] if tok is not None else row["first_char_divergence"]
                    if idx is not None:
                        divergences.append(idx)
                rows.append(row)
            s["equal_rate"] = s["equal"] / s["compared"] if s["compared"] else None
            s["first_divergence_min"] = min(divergences) if divergences else None
            s["first_divergence_median"] = st.median(divergences)
            summary.append(s)
    return rows, summary


# --- K sweep -----------------------------------------------------------------------------------------

def k_family(md: MethodData) -> str:
    """The method a K variant belongs to: summary["base_method"] when run.py records it, else the folder
    name without a `-k<K>` suffix."""
    if md.summary.get("base_method"):
        return md.summary["base_method"]
    m = _K_SUFFIX.match(md.name)
    return m.group("base") if m else md.name


def ksweep_rows(run: RunData, speed: list[dict]) -> list[dict]:
    families: dict[str, dict[int, MethodData]] = {}
    for md in run.methods.values():
        if not md.speculative or md.k is None:
            continue
        fam = families.setdefault(k_family(md), {})
        if md.k not in fam or _K_SUFFIX.match(md.name):   # prefer the explicit <method>-k<K> folder
            fam[md.k] = md
    rows = []
    for fam, by_k in sorted(families.items()):
        if len(by_k) < 2:
            continue
        for task in run.tasks:
            for c in sorted({r["concurrency"] for r in speed if r["method"] in {m.name for m in by_k.values()}}):
                tpot_by_k = {}
                entries = []
                for k, md in sorted(by_k.items()):
                    r = next((x for x in speed if x["method"] == md.name and x["task"] == task
                              and x["concurrency"] == c), None)
                    if r is None:
                        continue
                    acc = (md.tasks.get(task) or {})
                    tpot_by_k[k] = r["tpot_p50_ms"]
                    entries.append({"family": fam, "task": task, "concurrency": c, "k": k, "method": md.name,
                                    "tpot_p50_ms": r["tpot_p50_ms"], "baseline_tpot_p50_ms": r["baseline_tpot_p50_ms"],
                                    "tpot_speedup": r["tpot_speedup"], "output_throughput": r["output_throughput"],
                                    "bench_acceptance_length": r["bench_acceptance_length"],
                                    "acceptance_phase_mean_length": acc.get("mean_acceptance_length")
                                    if acc.get("num_draft_tokens") else None,
                                    "spec_override": json.dumps(md.summary.get("spec_override"), sort_keys=True)})
                if len(tpot_by_k) < 2:
                    continue
                stop = st.gain_stop(tpot_by_k)
                note = ("best TPOT at the largest K tested: no plateau yet, try larger K" if stop == max(tpot_by_k)
                        else f"K above {stop} bought < {st.GAIN_TOLERANCE:.0%} TPOT")
                for e in entries:
                    e["gain_stops_at_k"] = stop
                    e["gain_note"] = note
                rows.extend(entries)
    return rows


# --- the whole report --------------------------------------------------------------------------------

@dataclass
class Report:
    run: RunData
    methods: list[dict]
    cells: list[dict]
    speed: list[dict]
    crossover: list[dict]
    acceptance: list[dict]
    positions: list[dict]
    histogram: list[dict]
    equality: list[dict]
    equality_summary: list[dict]
    ksweep: list[dict]
    plots: dict[str, bytes] = field(default_factory=dict)   # report/<name>.png -> bytes
    plot_captions: dict[str, str] = field(default_factory=dict)

    def tables(self) -> dict[str, list[dict]]:
        return {"methods": self.methods, "bench_cells": self.cells, "speed": self.speed,
                "crossover": self.crossover, "acceptance": self.acceptance, "acceptance_positions": self.positions,
                "acceptance_histogram": self.histogram, "equality_requests": self.equality,
                "equality_summary": self.equality_summary, "ksweep": self.ksweep}


def method_rows(run: RunData) -> list[dict]:
    rows = []
    for md in run.methods.values():
        server = md.summary.get("server") or {}
        base = run.methods.get(md.baseline or "")
        base_kv = ((base.summary.get("server") or {}).get("kv_cache_tokens")) if base else None
        rows.append({"method": md.name, "status": "ok", "baseline": md.baseline, "comparable": md.comparable,
                     "k": md.k, "speculative_config": json.dumps(md.summary.get("speculative_config"), sort_keys=True)
                     if md.speculative else None,
                     "spec_override": json.dumps(md.summary.get("spec_override"), sort_keys=True)
                     if md.summary.get("spec_override") else None,
                     "target": server.get("target"), "model_runner": server.get("model_runner"),
                     "async_scheduling": server.get("async_scheduling"),
                     "kv_cache_tokens": server.get("kv_cache_tokens"),
                     "kv_cache_loss": st.kv_loss(server.get("kv_cache_tokens"), base_kv) if md.baseline else None,
                     "crosscheck_ok": (md.summary.get("crosscheck") or {}).get("ok"),
                     "prometheus_view": _prometheus_view(md.summary),
                     "error": None, "folder": md.path.name})
    for f in run.failed:
        rows.append({"method": f.name, "status": "failed (superseded by a later ok run)" if f.superseded else "failed",
                     "baseline": None, "comparable": None, "k": None, "speculative_config": None,
                     "spec_override": None, "target": None, "model_runner": None, "async_scheduling": None,
                     "kv_cache_tokens": None, "kv_cache_loss": None, "crosscheck_ok": None,
                     "prometheus_view": None, "error": f.error,
                     "folder": f.path.name if f.path else None})
    return rows


def build(run_dir: Path, tokenizers: Tokenizers | None = None, with_plots: bool = True) -> Report:
    run = load_run(run_dir)
    cells = [c for md in run.methods.values() for t in run.tasks for c in bench_cells(md, t)]
    speed = speed_rows(run)
    acc, positions, hist = acceptance_rows(run)
    eq, eq_summary = equality_rows(run, tokenizers)
    report = Report(run=run, methods=method_rows(run), cells=cells, speed=speed, crossover=crossover_rows(speed),
                    acceptance=acc, positions=positions, histogram=hist, equality=eq, equality_summary=eq_summary,
                    ksweep=ksweep_rows(run, speed))
    if with_plots:
        _make_plots(report)
    return report


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)


def _make_plots(rep: Report) -> None:
    run = rep.run
    spec = [md for md in run.methods.values() if md.speculative]
    for md in spec:
        per_task = {t: (md.tasks.get(t) or {}).get("per_position") if (md.tasks.get(t) or {}).get("num_draft_tokens")
                    else None for t in run.tasks if t in md.tasks}
        name = f"{REPORT_DIR}/acceptance_by_position_{_safe(md.name)}.png"
        rep.plots[name] = plots.acceptance_by_position(md.name, per_task)
        rep.plot_captions[name] = f"Acceptance by draft position, {md.name} (acceptance phase, all tasks)"
        for t in run.tasks:
            f = md.tasks.get(t)
            if f is None:
                continue
            name = f"{REPORT_DIR}/histogram_{_safe(md.name)}_{_safe(t)}.png"
            rep.plots[name] = plots.histogram(md.name, t, f.get("histogram") if f.get("num_draft_tokens") else None)
            rep.plot_captions[name] = f"Accepted drafts per verify step, {md.name}, {t} (pooled over requests)"
    for t in run.tasks:
        series: dict[str, dict[str, list[tuple]]] = {}
        for r in rep.speed:
            if r["task"] != t or r["role"] != "spec":
                continue
            label = r["method"] + ("" if r["comparable"] else " (not comparable)")
            s = series.setdefault(label, {"tpot": [], "throughput": []})
            s["tpot"].append((r["concurrency"], r["tpot_speedup"], r["tpot_speedup_low"], r["tpot_speedup_high"]))
            s["throughput"].append((r["concurrency"], r["throughput_speedup"], r["throughput_speedup_low"],
                                    r["throughput_speedup_high"]))
        if series:
            name = f"{REPORT_DIR}/speedup_vs_concurrency_{_safe(t)}.png"
            rep.plots[name] = plots.speedup_vs_concurrency(t, series)
            rep.plot_captions[name] = (f"Speedup against the baseline vs concurrency, {t}; bars = 95 % bootstrap "
                                       "interval over repeats; dashed line = 1.0×")
    for fam in sorted({r["family"] for r in rep.ksweep}):
        for t in run.tasks:
            rows = [r for r in rep.ksweep if r["family"] == fam and r["task"] == t]
            if not rows:
                continue
            by_c: dict[int, list[tuple]] = {}
            for r in rows:
                by_c.setdefault(r["concurrency"], []).append((r["k"], r["tpot_p50_ms"], r["bench_acceptance_length"]))
            base = {c: next((r["baseline_tpot_p50_ms"] for r in rows if r["concurrency"] == c), None) for c in by_c}
            stop = {c: next((r["gain_stops_at_k"] for r in rows if r["concurrency"] == c), None) for c in by_c}
            name = f"{REPORT_DIR}/k_sweep_{_safe(fam)}_{_safe(t)}.png"
            rep.plots[name] = plots.k_sweep(fam, t, by_c, base, stop)
            rep.plot_captions[name] = (f"K sweep of {fam}, {t}: TPOT p50 and mean acceptance length (bench) vs K; "
                                       f"vertical line = where the gain stops (smallest K within "
                                       f"{st.GAIN_TOLERANCE:.0%} of the best TPOT)")


# --- rendering: one list of blocks, two renderers -------------------------------------------------------

def _x(v: float | None, digits: int = 2) -> str:
    return "n/a" if v is None else f"{v:.{digits}f}×"


def _pct(v: float | None, digits: int = 1) -> str:
    return "n/a" if v is None else f"{100 * v:.{digits}f} %"


def _num(v, digits: int = 2) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int) or (isinstance(v, float) and v.is_integer() and abs(v) >= 1000):
        return f"{int(v):,}"
    return f"{v:.{digits}f}"


def _ci(low: float | None, high: float | None) -> str:
    return "" if low is None or high is None else f" [{low:.2f}–{high:.2f}]"


def _pcts(row: dict, m: str) -> str:
    parts = []
    for p in PERCENTILES:
        v = _num(row.get(f"{m}_p{p}_ms"), 1)
        if p != 50 and row.get(f"{m}_p{p}_unstable") and v != "n/a":
            v += "†"
        parts.append(v)
    return " / ".join(parts)


def _label(row: dict) -> str:
    return row["method"] + ("" if row.get("comparable", True) else " ⚠ not comparable")


def _statements(rep: Report) -> dict[str, list[str]]:
    """Plain sentences per spec cell: helped / did not help / not comparable, and the failed runs."""
    out: dict[str, list[str]] = {"helped": [], "not_helped": [], "not_comparable": [], "failed": []}
    for r in rep.speed:
        if r["role"] != "spec" or r["tpot_speedup"] is None:
            continue
        where = f"{r['method']} on {r['task']} at concurrency {r['concurrency']}"
        nums = (f"TPOT {_x(r['tpot_speedup'])}{_ci(r['tpot_speedup_low'], r['tpot_speedup_high'])}, "
                f"throughput {_x(r['throughput_speedup'])}"
                f"{_ci(r['throughput_speedup_low'], r['throughput_speedup_high'])}")
        if not r["comparable"]:
            out["not_comparable"].append(f"{where}: {nums}; synthetic rejection sampling, not a real result")
            continue
        v, tv, tput = r["tpot_verdict"], r["throughput_verdict"], r["throughput_speedup"]
        if v.startswith("no interval"):
            nums += "; one repeat, no interval"
        if v == "no clear difference":
            out["not_helped"].append(f"{where}: no clear difference, the 95 % interval includes 1.0× ({nums})")
        elif r["tpot_speedup"] <= 1.0:
            out["not_helped"].append(f"{where}: not faster than the baseline ({nums})")
        elif tput is not None and (tput <= 1.0 or tv == "lower"):
            out["not_helped"].append(f"{where}: faster per token but no more output tokens/s ({nums})")
        elif v.startswith("no interval"):
            out["helped"].append(f"{where}: faster by the point estimate only ({nums})")
        else:
            out["helped"].append(f"{where}: faster ({nums})")
    out["failed"] = [f"{f.name}: FAILED ({f.error or 'no reason recorded'})" + (
        f" — folder {f.path.name}, not used" if f.path else "") for f in rep.run.failed if not f.superseded]
    out["failed"] += [f"{f.name}: an earlier attempt failed ({f.error}); its folder "
                      f"{f.path.name if f.path else '?'} is not used" for f in rep.run.failed if f.superseded]
    return out


def blocks(rep: Report) -> list[tuple]:
    run = rep.run
    man = run.manifest
    wl = man.get("workload") or {}
    out: list[tuple] = [("h1", f"specstack report: run {man.get('run_id') or run.run_dir.name}")]
    vllm = next((md.summary.get("server", {}).get("vllm_version") for md in run.methods.values()
                 if (md.summary.get("server") or {}).get("vllm_version")), None)
    out.append(("p", f"Model set {man.get('model_set', 'n/a')}, platform {man.get('platform', 'n/a')}, vLLM "
                     f"{vllm or 'n/a'}, git {man.get('git_commit', 'n/a')}. Workload: tasks "
                     f"{', '.join(wl.get('tasks') or run.tasks)}; {wl.get('num_prompts', 'n/a')} prompts per bench "
                     f"cell at fixed output length {wl.get('perf_output_len', 'n/a')}; acceptance phase up to "
                     f"{wl.get('acceptance_max_tokens', 'n/a')} tokens with natural stops; concurrencies "
                     f"{', '.join(str(c) for c in wl.get('concurrencies') or [])}; "
                     f"{wl.get('repeats', 'n/a')} repeat(s) per cell."))

    said = _statements(rep)
    out.append(("h2", "Verdict"))
    if said["failed"]:
        out.append(("p", "**Failed runs** (reported, never used as data):"))
        out.append(("ul", said["failed"]))
    out.append(("p", "**Did not help** (not faster per token, or the 95 % interval includes 1.0×, or no "
                     "throughput gain):"))
    out.append(("ul", said["not_helped"] or ["none"]))
    out.append(("p", "**Helped**:"))
    out.append(("ul", said["helped"] or ["none"]))
    if said["not_comparable"]:
        out.append(("p", "**Not comparable** (stress runs; their speed is no evidence either way):"))
        out.append(("ul", said["not_comparable"]))
    if not said["helped"] and not said["not_helped"] and not said["not_comparable"]:
        out.append(("p", "No cell could be compared with a baseline of the same target (see the warnings)."))
    if run.warnings:
        out.append(("p", "**Warnings**:"))
        out.append(("ul", run.warnings))

    out.append(("h2", "Methods"))
    out.append(("table", ["method", "status", "vs", "K", "speculative config", "override", "runner", "async sched.",
                          "KV cache tokens", "KV loss vs baseline", "cross-check", "Prometheus view"],
                [[r["method"] + ("" if r["comparable"] in (True, None) else " ⚠ not comparable"), r["status"],
                  r["baseline"] or "—", _num(r["k"]), r["speculative_config"] or "—", r["spec_override"] or "—",
                  r["model_runner"] or "n/a", _num(r["async_scheduling"]), _num(r["kv_cache_tokens"]),
                  _pct(r["kv_cache_loss"]) if r["baseline"] else "—",
                  "n/a" if r["crosscheck_ok"] is None else ("exact" if r["crosscheck_ok"] else "MISMATCH"),
                  r["prometheus_view"] or "n/a"]
                 for r in rep.methods]))
    failures = [r for r in rep.methods if r["status"].startswith("failed")]
    if failures:
        out.append(("table", ["failed method", "folder", "error"],
                    [[r["method"], r["folder"] or "—", r["error"] or "n/a"] for r in failures]))

    for task in run.tasks:
        out.append(("h2", f"Task: {task}"))
        speed = [r for r in rep.speed if r["task"] == task]
        out.append(("h3", "Speed against the baseline (perf phase, fixed output length)"))
        out.append(("table", ["method", "vs", "c", "N", "out tok/s", "throughput × [95 % CI]", "verdict",
                              "TPOT p50 ms", "TPOT speedup × [95 % CI]", "verdict", "acc. length (bench)",
                              "efficiency", "KV loss", "preempt.", "failed req.", "note"],
                    [[_label(r), r["baseline"] or "—", r["concurrency"], r["repeats"], _num(r["output_throughput"], 1),
                      ("—" if r["role"] != "spec" else _x(r["throughput_speedup"]) +
                       _ci(r["throughput_speedup_low"], r["throughput_speedup_high"])), r["throughput_verdict"],
                      _num(r["tpot_p50_ms"]),
                      ("—" if r["role"] != "spec" else _x(r["tpot_speedup"]) +
                       _ci(r["tpot_speedup_low"], r["tpot_speedup_high"])), r["tpot_verdict"],
                      _num(r["bench_acceptance_length"]), _pct(r["efficiency"], 0),
                      "—" if r["role"] != "spec" else _pct(r["kv_cache_loss"]),
                      _num(r["preemptions"], 0), _num(r["failed_requests"], 0), r["note"] or ""]
                     for r in speed]))
        out.append(("h3", "Latency percentiles, ms (p50 / p95 / p99; median over repeats)"))
        out.append(("table", ["method", "c", "N", "requests/repeat", "TPOT", "ITL", "TTFT", "E2EL"],
                    [[_label(r), r["concurrency"], r["repeats"], _num(r["requests_per_repeat"]),
                      _pcts(r, "tpot"), _pcts(r, "itl"), _pcts(r, "ttft"), _pcts(r, "e2el")] for r in speed]))
        cross = [r for r in rep.crossover if r["task"] == task]
        if cross:
            out.append(("h3", "Crossover concurrency (where a method stops beating the baseline)"))
            out.append(("table", ["method", "vs", "TPOT", "throughput"],
                        [[_label(r), r["baseline"], r["tpot_text"], r["throughput_text"]] for r in cross]))
        acc = [r for r in rep.acceptance if r["task"] == task]
        out.append(("h3", "Acceptance (acceptance phase, greedy, natural stops)"))
        out.append(("table", ["method", "K", "acceptance rate", "mean acc. length", "no-accept steps",
                              "histogram (steps accepting j=0..K)", "per-position (≥ p+1 accepted / steps)",
                              "steps", "drafts", "accepted", "requests", "failed req.", "finish reasons"],
                    [[_label(r), _num(r["k"]), _pct(r["acceptance_rate"]), _num(r["mean_acceptance_length"]),
                      _pct(r["no_accept_share"]), r["histogram"] or "n/a",
                      "n/a" if r["per_position"] is None else
                      ", ".join(f"{x:.2f}" for x in json.loads(r["per_position"])),
                      _num(r["num_spec_steps"]), _num(r["num_draft_tokens"]), _num(r["num_accepted_draft_tokens"]),
                      _num(r["requests"]), _num(r["failed_requests"]), r["finish_reasons"]] for r in acc]))
        eqs = [r for r in rep.equality_summary if r["task"] == task]
        if eqs:
            out.append(("h3", "Output equality against the baseline (acceptance phase only)"))
            out.append(("table", ["method", "vs", "compared", "equal", "equal rate", "finish_reason differs",
                                  "first divergence (min / median)", "unit", "note"],
                        [[_label(r), r["baseline"], r["compared"], r["equal"], _pct(r["equal_rate"]),
                          r["finish_reason_differs"],
                          f"{_num(r.get('first_divergence_min'), 0)} / {_num(r.get('first_divergence_median'), 1)}",
                          r["unit"] or "n/a", r["note"] or (r["tokenizer"] if r["unit"] == "character" else "")]
                         for r in eqs]))
            diffs = [r for r in rep.equality if r["task"] == task and r["equal"] is not True]
            if diffs:
                out.append(("p", "Requests whose output differs from the baseline's (all others are identical):"))
                out.append(("table", ["method", "request id", "first diverging index", "unit",
                                      "finish_reason (method / baseline)", "completion tokens (method / baseline)",
                                      "note"],
                            [[r["method"], r["id"],
                              _num(r["first_token_divergence" if r["unit"] == "token" else "first_char_divergence"], 0),
                              r["unit"], f"{r['finish_reason']} / {r['baseline_finish_reason']}",
                              f"{_num(r['completion_tokens'], 0)} / {_num(r['baseline_completion_tokens'], 0)}",
                              r["note"] or ""] for r in diffs]))
        for name, caption in rep.plot_captions.items():
            if name.startswith(f"{REPORT_DIR}/speedup_vs_concurrency_{_safe(task)}."):
                out.append(("img", name, caption))

    if rep.ksweep:
        out.append(("h2", "K sweep"))
        out.append(("table", ["method family", "task", "c", "K", "folder", "TPOT p50 ms", "baseline TPOT ms",
                              "TPOT speedup", "acc. length (bench)", "acc. length (acceptance phase)",
                              "gain stops at K", "note"],
                    [[r["family"], r["task"], r["concurrency"], r["k"], r["method"], _num(r["tpot_p50_ms"]),
                      _num(r["baseline_tpot_p50_ms"]), _x(r["tpot_speedup"]), _num(r["bench_acceptance_length"]),
                      _num(r["acceptance_phase_mean_length"]), _num(r["gain_stops_at_k"]), r["gain_note"]]
                     for r in rep.ksweep]))
        for name, caption in rep.plot_captions.items():
            if name.startswith(f"{REPORT_DIR}/k_sweep_"):
                out.append(("img", name, caption))

    out.append(("h2", "Acceptance plots"))
    for name, caption in rep.plot_captions.items():
        if name.startswith((f"{REPORT_DIR}/acceptance_by_position_", f"{REPORT_DIR}/histogram_")):
            out.append(("img", name, caption))

    repeats = max((r["repeats"] for r in rep.speed), default=0)
    out.append(("h2", "How to read this"))
    out.append(("ul", [
        "TPOT speedup = median over repeats of the baseline's p50 TPOT ÷ median over repeats of the method's p50 "
        "TPOT, for the same task and concurrency; > 1.0× means the method is faster per output token. Throughput "
        "speedup = method output tok/s ÷ baseline output tok/s (medians over repeats).",
        f"95 % interval: percentile bootstrap ({st.BOOTSTRAP_RESAMPLES} resamples, seed {st.SEED}) of the ratio of "
        "medians, resampling the baseline's and the method's repeats independently. A cell whose interval includes "
        "1.0× is \"no clear difference\". With one repeat there is no interval (\"no interval\"); run with "
        f"--repeats ≥ 3 for a usable one (this run: up to {repeats}).",
        f"† = unstable percentile: fewer than {st.MIN_TAIL} samples lie beyond it in a repeat, i.e. n·(1−p) < "
        f"{st.MIN_TAIL}; p95 needs ≥ {st.min_samples(95)} samples and p99 ≥ {st.min_samples(99)}. TPOT, TTFT "
        "and E2EL have one sample per request; the ITL sample count is estimated as (output tokens − requests) ÷ "
        "bench acceptance length.",
        "Efficiency = TPOT speedup ÷ mean acceptance length measured by bench in the same cell. The mean acceptance "
        "length (tokens per verify step, bonus token included) is the speedup you would get if drafting and "
        "verification cost nothing; efficiency says how much of it turned into speed.",
        "Crossover: the first tested concurrency at which the method no longer beats the baseline after a win at a "
        "lower concurrency. \"Beats\" means the 95 % interval lies above 1.0×; with one repeat (no interval), "
        "the point estimate is > 1.0×.",
        "Acceptance rate = accepted ÷ drafted tokens; mean acceptance length = 1 + accepted ÷ verify steps; "
        "no-accept steps = histogram[0] ÷ steps; per-position p = share of steps that accepted at least p+1 drafts. "
        "All from the acceptance phase's per-request metrics summed over requests. n/a = no drafts, never 0 %.",
        "KV loss = 1 − method KV-cache tokens ÷ baseline KV-cache tokens (from the server's start-up log); draft "
        "models and heads share the pool with the target.",
        "Preemptions = Δ vllm:num_preemptions over the bench windows of the cell (all repeats). Failed req. = "
        "bench's failed count (all repeats).",
        "Output equality compares the acceptance phase's greedy outputs with natural stops, never the fixed-length "
        "perf outputs. The first diverging index is in target-tokenizer tokens (both texts re-tokenized) unless "
        "the unit column says character (the tokenizer could not be loaded).",
        "⚠ not comparable: the method ran with synthetic rejection sampling, which does not preserve the output "
        "distribution; its speed is a stress figure, not a result.",
    ]))
    return out


_MD_ESCAPE = str.maketrans({"|": "\\|", "\n": " "})


def render_markdown(bl: list[tuple]) -> str:
    lines = []
    for b in bl:
        kind = b[0]
        if kind in ("h1", "h2", "h3"):
            lines += ["#" * int(kind[1]) + " " + b[1], ""]
        elif kind == "p":
            lines += [b[1], ""]
        elif kind == "ul":
            lines += [f"- {item}" for item in b[1]] + [""]
        elif kind == "table":
            head, rows = b[1], b[2]
            lines.append("| " + " | ".join(str(h).translate(_MD_ESCAPE) for h in head) + " |")
            lines.append("|" + "---|" * len(head))
            lines += ["| " + " | ".join(str(c).translate(_MD_ESCAPE) for c in row) + " |" for row in rows]
            lines.append("")
        elif kind == "img":
            lines += [f"![{b[2]}]({b[1]})", "", f"*{b[2]}*", ""]
    return "\n".join(lines)


_CSS = """body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em;color:#222;max-width:1600px}
table{border-collapse:collapse;margin:0.5em 0 1.5em;font-size:13px}th,td{border:1px solid #ccc;padding:3px 6px;
text-align:left;vertical-align:top}th{background:#f0f3f8}tr:nth-child(even) td{background:#fafafa}
figure{margin:1em 0}figcaption{font-size:12px;color:#555}img{max-width:100%;border:1px solid #ddd}
h2{border-bottom:2px solid #3274d9;padding-bottom:2px;margin-top:1.6em}code{background:#f4f4f4}"""


def _inline(text: str) -> str:
    return re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", html.escape(str(text)))


def render_html(bl: list[tuple], images: dict[str, bytes], title: str) -> str:
    parts = [f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
             f"<style>{_CSS}</style></head><body>"]
    for b in bl:
        kind = b[0]
        if kind in ("h1", "h2", "h3"):
            parts.append(f"<{kind}>{html.escape(b[1])}</{kind}>")
        elif kind == "p":
            parts.append(f"<p>{_inline(b[1])}</p>")
        elif kind == "ul":
            parts.append("<ul>" + "".join(f"<li>{_inline(i)}</li>" for i in b[1]) + "</ul>")
        elif kind == "table":
            head = "".join(f"<th>{html.escape(str(h))}</th>" for h in b[1])
            body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in b[2])
            parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
        elif kind == "img":
            data = base64.b64encode(images[b[1]]).decode("ascii")
            parts.append(f"<figure><img alt=\"{html.escape(b[2])}\" src=\"data:image/png;base64,{data}\">"
                         f"<figcaption>{html.escape(b[2])}</figcaption></figure>")
    parts.append("</body></html>")
    return "\n".join(parts)


_PCT_COLS = [f"{m}_p{p}_ms" for m in METRICS for p in PERCENTILES]
_UNSTABLE_COLS = [f"{m}_p{p}_unstable" for m in METRICS for p in (95, 99)]
# Fixed columns per tidy table, so an empty table still has its header (and the schema cannot drift silently).
COLUMNS: dict[str, list[str]] = {
    "methods": ["method", "status", "baseline", "comparable", "k", "speculative_config", "spec_override", "target",
                "model_runner", "async_scheduling", "kv_cache_tokens", "kv_cache_loss", "crosscheck_ok", "prometheus_view", "error",
                "folder"],
    "bench_cells": ["method", "task", "concurrency", "repeat", "status", "file", "source", "completed", "failed",
                    "total_output_tokens", "duration_s", "output_throughput",
                    *[f"{k}_{m}_ms" for m in METRICS for k in ("mean", *(f"p{p}" for p in PERCENTILES))],
                    "spec_decode_acceptance_length", "spec_decode_acceptance_rate", "spec_decode_draft_tokens",
                    "preemptions"],
    "speed": ["method", "baseline", "task", "concurrency", "role", "comparable", "repeats", "baseline_repeats",
              "cells_failed", "output_throughput", "baseline_output_throughput", *_PCT_COLS, "baseline_tpot_p50_ms",
              "requests_per_repeat", "itl_samples_per_repeat_est", *_UNSTABLE_COLS, "bench_acceptance_length",
              "bench_acceptance_rate", "tpot_speedup", "tpot_speedup_low", "tpot_speedup_high", "tpot_verdict",
              "throughput_speedup", "throughput_speedup_low", "throughput_speedup_high", "throughput_verdict",
              "efficiency", "preemptions", "failed_requests", "kv_cache_tokens", "kv_cache_loss", "note"],
    "crossover": ["method", "baseline", "task", "comparable", "tpot_kind", "tpot_crossover_concurrency", "tpot_text",
                  "throughput_kind", "throughput_crossover_concurrency", "throughput_text"],
    "acceptance": ["method", "baseline", "task", "k", "comparable", "acceptance_rate", "mean_acceptance_length",
                   "no_accept_share", "num_spec_steps", "num_draft_tokens", "num_accepted_draft_tokens", "histogram",
                   "per_position", "requests", "completion_tokens", "failed_requests", "finish_reasons"],
    "acceptance_positions": ["method", "task", "position", "rate"],
    "acceptance_histogram": ["method", "task", "accepted", "steps", "share"],
    "equality_requests": ["method", "baseline", "task", "id", "equal", "first_token_divergence",
                          "first_char_divergence", "unit", "finish_reason", "baseline_finish_reason",
                          "completion_tokens", "baseline_completion_tokens", "note"],
    "equality_summary": ["method", "baseline", "task", "comparable", "requests", "compared", "equal", "equal_rate",
                         "finish_reason_differs", "first_divergence_min", "first_divergence_median", "unit",
                         "tokenizer", "note"],
    "ksweep": ["family", "task", "concurrency", "k", "method", "tpot_p50_ms", "baseline_tpot_p50_ms", "tpot_speedup",
               "output_throughput", "bench_acceptance_length", "acceptance_phase_mean_length", "spec_override",
               "gain_stops_at_k", "gain_note"],
}


def _table_bytes(name: str, rows: list[dict]) -> tuple[bytes, bytes]:
    columns = COLUMNS[name]
    extra = {k for r in rows for k in r} - set(columns)
    if extra:
        raise AssertionError(f"table {name}: columns {sorted(extra)} missing from report.COLUMNS")
    df = pd.DataFrame(rows, columns=columns)
    buf = io.BytesIO()
    df.to_parquet(buf, index=False)
    return df.to_csv(index=False).encode("utf-8"), buf.getvalue()


def _prometheus_view(summary: dict) -> str | None:
    """Which of the two views a method's figures rest on: the collector's direct /metrics diff always;
    Prometheus's only when the run was given one, and then whether it answered."""
    view = summary.get("prometheus_view")
    if not view:
        return "not collected (direct diff only)"
    missing = {t: v.get("reason") for t, v in view.get("tasks", {}).items() if v.get("status") != "ok"}
    if not missing:
        return "ok"
    return "MISSING for " + ", ".join(f"{t} ({r})" for t, r in missing.items()) + "; direct diff stands"


def write_report(run_dir: Path, tokenizers: Tokenizers | None = None) -> Path:
    """Write report.md, report.html, report/*.png and report/tables/*.csv|parquet into the run folder.
    Returns the path of report.md."""
    run_dir = Path(run_dir)
    rep = build(run_dir, tokenizers)
    for name, data in rep.plots.items():
        atomic_write_bytes(run_dir / name, data)
    for name, rows in rep.tables().items():
        csv, parquet = _table_bytes(name, rows)
        atomic_write_bytes(run_dir / REPORT_DIR / "tables" / f"{name}.csv", csv)
        atomic_write_bytes(run_dir / REPORT_DIR / "tables" / f"{name}.parquet", parquet)
    bl = blocks(rep)
    title = bl[0][1]
    atomic_write_text(run_dir / "report.html", render_html(bl, rep.plots, title))
    return atomic_write_text(run_dir / "report.md", render_markdown(bl))


# --- command line -------------------------------------------------------------------------------------

def _cmd_report(args: argparse.Namespace) -> int:
    run_dir = resolve_run_dir(args.run, args.results_dir)
    md = write_report(run_dir)
    print(json.dumps({"report_md": str(md), "report_html": str(run_dir / "report.html"),
                      "tables": str(run_dir / REPORT_DIR / "tables"), "plots": str(run_dir / REPORT_DIR)}))
    return 0


def register(sub) -> None:
    p = sub.add_parser("report", help="write report.md/.html, plots and tidy tables for a finished run")
    p.add_argument("run", metavar="RUN_DIR_OR_ID", help="a run folder, or a run id under --results")
    p.add_argument("--results", dest="results_dir", type=Path, default=None,
                   help="results folder holding run ids (default: $SPECSTACK_RESULTS or results/)")
    p.set_defaults(func=_cmd_report)
