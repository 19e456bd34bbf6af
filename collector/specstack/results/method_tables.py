"""Tidy tables (pandas) of one method's bundle: one row per request, window, check and bench cell."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from specstack.results import layout
from specstack.results.files import atomic_write_text
from specstack.results.records import read_records
from specstack.results.summary import Summary

_SPEC_FIELDS = ("num_spec_steps", "num_draft_tokens", "num_accepted_draft_tokens", "acceptance_histogram")


def request_rows(method_dir: Path, summary: Summary) -> list[dict[str, Any]]:
    rows = []
    for task in summary.task_figures:
        for r in read_records(Path(method_dir) / layout.acceptance_records(task)):
            spec = r["spec"] or {}
            rows.append(
                {
                    "method": summary.method,
                    "task": task,
                    "id": r["id"],
                    "finish_reason": r["finish_reason"],
                    "prompt_tokens": (r["usage"] or {}).get("prompt_tokens"),
                    "completion_tokens": (r["usage"] or {}).get("completion_tokens"),
                    "seconds": r["seconds"],
                    "error": r["error"],
                    **{
                        k: (str(spec[k]) if k == "acceptance_histogram" else spec[k]) for k in _SPEC_FIELDS if k in spec
                    },
                }
            )
    return rows


def window_rows(summary: Summary) -> list[dict[str, Any]]:
    rows = []
    for w in summary.window_list:
        counted = w.from_counters or {}
        rows.append(
            {
                "method": summary.method,
                "window": w.name,
                "phase": w.phase,
                "task": w.task,
                "concurrency": w.concurrency,
                "request_rate": w.request_rate,
                "load": w.load,
                "repeat": w.repeat,
                "start": w.start,
                "end": w.end,
                "status": w.status,
                "reason": w.reason,
                "checks_ok": w.checks_ok,
                "num_drafts": counted.get("steps"),
                "num_draft_tokens": counted.get("draft_tokens"),
                "num_accepted_tokens": counted.get("accepted"),
                "acceptance_rate": counted.get("acceptance_rate"),
                "mean_acceptance_length": counted.get("mean_acceptance_length"),
                **{f"prefix_cache_{k}": v for k, v in (w.prefix_cache or {}).items()},
            }
        )
    return rows


def check_rows(summary: Summary) -> list[dict[str, Any]]:
    return [{"method": summary.method, "window": w.name, **c} for w in summary.window_list for c in w.checks or []]


def bench_rows(summary: Summary) -> list[dict[str, Any]]:
    """A cell's every scalar as the summary writes it (bench's own figures under bench's names included)."""
    return [
        {
            "method": summary.method,
            "task": task,
            **{k: v for k, v in cell.to_json().items() if not isinstance(v, (list, dict))},
        }
        for task, figures in summary.task_figures.items()
        for cell in figures.cells
    ]


def write_method_tables(method_dir: Path, summary: Summary) -> None:
    import pandas as pd  # not at import: a sweep's start-up does without it (runs/warm_imports.py loads it early)

    for name, rows in (
        ("requests", request_rows(method_dir, summary)),
        ("windows", window_rows(summary)),
        ("checks", check_rows(summary)),
        ("bench", bench_rows(summary)),
    ):
        atomic_write_text(Path(method_dir) / layout.method_table(name), pd.DataFrame(rows).to_csv(index=False))
