"""Prefix cache hit rate per method and task (runs/prefix_cache.py records it per window): rows for the tidy
table, the report's "Prefix cache" table and the console's. Shown when a method of the run cached prefixes
(`--prefix-caching`) or a window queried the cache; a run with caching off everywhere has nothing to show."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rich.table import Table

from specstack.figures.prefix_cache import enabled, pooled
from specstack.report.format import num, pct
from specstack.report.render import Block
from specstack.report.rows import PrefixCacheRow
from specstack.results.reader import MethodData, RunData

if TYPE_CHECKING:
    from specstack.report.contents import Report

UNKNOWN = {"queries": None, "hits": None, "hit_rate": None}


def _row(
    md: MethodData,
    task: str,
    phase: str,
    figures: dict[str, Any],
    concurrency: float | None = None,
    temperature: float | None = None,
) -> PrefixCacheRow:
    return {
        "method": md.name,
        "label": md.display_name,
        "task": task,
        "phase": phase,
        "concurrency": concurrency,
        "temperature": temperature,
        "caching": enabled(md.record),
        "queries": figures.get("queries"),  # UNKNOWN's keys, in its order
        "hits": figures.get("hits"),
        "hit_rate": figures.get("hit_rate"),
    }


def prefix_cache_rows(run: RunData) -> list[PrefixCacheRow]:
    """Per method × task: the acceptance phase, each sampled temperature, and each bench concurrency (its
    repeats pooled: Σ hits / Σ queries)."""
    rows: list[PrefixCacheRow] = []
    for md in run.methods.values():
        for task in run.tasks:
            f = md.figures(task)
            rows.append(_row(md, task, "acceptance", f.prefix_cache or UNKNOWN))
            for s in f.sampled_phases:
                rows.append(_row(md, task, f"t{s.temperature:g}", s.prefix_cache or UNKNOWN, temperature=s.temperature))
            by_c: dict[tuple[int, float | None, str], list[dict[str, Any]]] = {}
            for cell in f.cells:  # closed loop by concurrency, then open loop by rate
                key = (
                    (0, cell.concurrency, "bench")
                    if cell.closed_loop
                    else (1, cell.request_rate, f"bench {cell.load_text}")
                )
                by_c.setdefault(key, []).append(cell.prefix_cache or UNKNOWN)
            rows += [
                _row(md, task, phase, pooled(parts), concurrency=c if not kind else None)
                for (kind, c, phase), parts in sorted(by_c.items())
            ]
    return rows


def shown(rows: list[PrefixCacheRow]) -> bool:
    return any(r["caching"] or r["queries"] for r in rows)


def rate_text(figures: Mapping[str, Any]) -> str:
    """ "41.2 % (1,234 / 2,995)": hit rate, then hit and queried prompt tokens; n/a without queries."""
    if not figures.get("queries"):
        return "n/a" if figures.get("queries") is None else "n/a (no queries)"
    return f"{pct(figures['hit_rate'])} ({num(figures['hits'])} / {num(figures['queries'])})"


def _grid(rows: list[PrefixCacheRow], task: str) -> tuple[list[str], list[list[str]]]:
    """Header and body of one task's table: methods as rows, phases as columns."""
    mine = [r for r in rows if r["task"] == task]
    phases = list(dict.fromkeys((r["phase"], r["concurrency"]) for r in mine))
    header = ["method", "prefix caching"] + [
        f"bench c={c}" if p == "bench" else "acceptance phase" if p == "acceptance" else f"sampled {p}"
        for p, c in phases
    ]
    body = []
    for method in dict.fromkeys(r["method"] for r in mine):
        cells = {(r["phase"], r["concurrency"]): r for r in mine if r["method"] == method}
        first = next(iter(cells.values()))
        body.append(
            [first["label"], "n/a" if first["caching"] is None else ("on" if first["caching"] else "off")]
            + [rate_text(cells[p]) if p in cells else "n/a" for p in phases]
        )
    return header, body


def prefix_cache_table(rep: Report, task: str) -> list[Block]:
    """The report's blocks for one task (none when no method cached prefixes)."""
    rows = [r for r in rep.prefix_cache if r["task"] == task]
    if not shown(rows):
        return []
    header, body = _grid(rows, task)
    return [
        ("h3", "Prefix cache (hit rate = Δ hits / Δ queries, in prompt tokens)"),
        ("table", header, body),
        (
            "p",
            "Each window's vllm:prefix_cache_hits and vllm:prefix_cache_queries deltas; bench repeats pooled "
            "(Σ hits / Σ queries). n/a: the window queried nothing (caching off). The warm-up fills the cache "
            "first, and EAGLE with prefix caching had hit-rate bugs (vLLM issue 33270): compare methods here "
            "before their speed.",
        ),
    ]


def console_table(run: RunData, task: str) -> Table | None:
    """The console's table for one task (None when no method cached prefixes)."""
    rows = [r for r in prefix_cache_rows(run) if r["task"] == task]
    if not shown(rows):
        return None
    header, body = _grid(rows, task)
    table = Table(title=f"{task}: prefix cache hit rate (hits / queries, prompt tokens)", title_justify="left")
    for col in header:
        table.add_column(col, justify="left" if col in ("method", "prefix caching") else "right")
    for line in body:
        table.add_row(*line)
    return table
