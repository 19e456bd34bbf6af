"""Assemble the comparison of two runs and write compare.md, compare.html, compare.json and its plots."""

from __future__ import annotations

import json
import math
from dataclasses import asdict
from pathlib import Path
from typing import Any

from specstack.compare import gate, pairing, plots, sections
from specstack.compare.acceptance import acceptance_rows
from specstack.compare.capacity import capacity_rows
from specstack.compare.contents import Comparison, run_id
from specstack.compare.outputs import output_rows
from specstack.compare.speed import speed_rows
from specstack.compare.speedups import speedup_rows
from specstack.report.equality import Tokenizers
from specstack.report.plots import safe_name, stamped
from specstack.report.render import render_html, render_markdown, title_of
from specstack.results import layout
from specstack.results.files import atomic_write_bytes, atomic_write_json, atomic_write_text
from specstack.results.reader import EAGER_NOTE, RunData, load_run

SCHEMA = "specstack.compare/1"


def compare(
    dir_a: Path,
    dir_b: Path,
    *,
    thresholds: list[gate.Threshold] | None = None,
    tokenizers: Tokenizers | None = None,
    tokenizer: str | None = None,
    with_plots: bool = True,
) -> Comparison:
    run_a, run_b = load_run(dir_a), load_run(dir_b)
    prs = pairing.pairs(run_a, run_b)
    acc, pos, hist = acceptance_rows(prs)
    speed, speed_notes = speed_rows(prs)
    out_rows, out_summary = output_rows(prs, tokenizers, tokenizer)
    thresholds = thresholds or []
    cmp = Comparison(
        run_a,
        run_b,
        prs,
        pairing.unmatched(run_a, run_b) + speed_notes,
        acc,
        pos,
        hist,
        speed,
        out_rows,
        out_summary,
        thresholds,
        gate.evaluate(thresholds, acc, pos, speed),
        speedups=speedup_rows(prs, run_a, run_b),
        capacity=capacity_rows(prs),
    )
    if with_plots:
        eager = [
            f"{side} {', '.join(run.eager_smoke)}" for side, run in (("A", run_a), ("B", run_b)) if run.eager_smoke
        ]
        with stamped(f"{EAGER_NOTE} ({'; '.join(eager)})" if eager else None, cmp.plot_captions):
            _plots(cmp)
    return cmp


def _plots(cmp: Comparison) -> None:
    for method in dict.fromkeys(p.method for p in cmp.pairs):
        per_task = {}
        for p in cmp.pairs:
            if p.method != method or not (p.a.speculative or p.b.speculative):
                continue
            fa, fb = p.a.figures(p.task), p.b.figures(p.task)
            per_task[p.task] = (
                fa.per_position if fa.num_draft_tokens else None,
                fb.per_position if fb.num_draft_tokens else None,
            )
        if per_task:
            name = f"compare_positions_{safe_name(method)}.png"
            cmp.plots[name] = plots.positions_a_vs_b(
                method, per_task, f"A ({run_id(cmp.run_a)})", f"B ({run_id(cmp.run_b)})"
            )
            cmp.plot_captions[name] = (
                f"Acceptance by draft position, {method}: A against B (acceptance phase; "
                "steps accepting at least p+1 drafts ÷ drafting steps)"
            )


def _clean(obj: Any) -> Any:
    """JSON without NaN (not valid JSON): None, as everywhere in specstack. JSON data in, JSON data out."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    return obj


def to_json(cmp: Comparison) -> dict[str, Any]:
    def side(run: RunData) -> dict[str, str | None]:
        return {"run_id": run_id(run), "folder": run.run_dir.name}  # no host paths

    cleaned: dict[str, Any] = _clean(
        {
            "schema": SCHEMA,
            "a": side(cmp.run_a),
            "b": side(cmp.run_b),
            "pairs": [
                {
                    "method": p.method,
                    "task": p.task,
                    "differences": [
                        {"fact": d.fact, "a": d.a, "b": d.b, "rules_out": list(d.rules_out)} for d in p.differences
                    ],
                    "unknown": p.unknown,
                }
                for p in cmp.pairs
            ],
            "unmatched": cmp.unmatched,
            "acceptance": cmp.acceptance,
            "positions": cmp.positions,
            "histogram": cmp.histogram,
            "speed": cmp.speed,
            "speedups": cmp.speedups,
            "capacity": cmp.capacity,
            "outputs": cmp.outputs,
            "outputs_summary": cmp.outputs_summary,
            "fail_on": [asdict(t) for t in cmp.thresholds],
            "gate": cmp.gate,
            "gate_failed": cmp.failed,
            "changed": cmp.changed(),
            "summary_findings": cmp.findings,
        }
    )
    return cleaned


def write(cmp: Comparison, out_dir: Path) -> dict[str, Path]:
    """compare.md, compare.html (plots embedded), compare.json and the PNGs into out_dir, each atomically."""
    out_dir = Path(out_dir)
    for name, data in cmp.plots.items():
        atomic_write_bytes(out_dir / name, data)
    bl = sections.blocks(cmp)
    return {
        "md": atomic_write_text(out_dir / layout.COMPARE_MD, render_markdown(bl)),
        "html": atomic_write_text(out_dir / layout.COMPARE_HTML, render_html(bl, cmp.plots, title_of(bl))),
        "json": atomic_write_json(out_dir / layout.COMPARE_JSON, to_json(cmp)),
    }


def default_out(dir_a: Path, dir_b: Path) -> Path:
    """Beside run B (results/ usually), never inside a bundle: a packed run stays as it was verified."""
    a, b = Path(dir_a).resolve(), Path(dir_b).resolve()
    return b.parent / layout.compare_dir(safe_name(a.name), safe_name(b.name))


def dumps(cmp: Comparison) -> str:
    return json.dumps(to_json(cmp), indent=2, ensure_ascii=False, default=str)
