"""What turning speculation on costs before the first request, per method against its baseline (#41 point 10):
the time to ready (and whether torch.compile found its cache), the checkpoints' size, the CUDA graph memory and the
memory and tokens left to the KV cache, each beside the baseline's, from the summaries (server.startup, read from
each server's log by server/startup.py; timings.server_ready; server.kv_cache_tokens)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from specstack.report.format import num, pct
from specstack.report.render import Block
from specstack.report.rows import StartCostRow
from specstack.report.verdicts import label
from specstack.results import layout
from specstack.results.reader import MethodData, RunData
from specstack.server.startup import phases

if TYPE_CHECKING:
    from specstack.report.contents import Report

FIGURES = ("ready_s", "weights_gib", "cuda_graph_gib", "kv_cache_gib", "kv_cache_tokens")
# generated from FIGURES; StartCostRow (report/rows.py) spells the same columns out, and tests/report/test_rows.py
# holds the two equal
COLUMNS = [
    "method",
    "label",
    "baseline",
    "compile_cache",
    *[c for f in FIGURES for c in (f, f"baseline_{f}")],
    "kv_cache_loss",
]


def _startup(md: MethodData) -> dict[str, Any]:
    """The summary's server.startup; a bundle from before the memory figures were read has them in its server
    log still, read here the same way."""
    server = md.record.server
    startup = (server.extra.get("startup") if server else None) or {}
    log = md.path / layout.SERVER_LOG
    if "weights_gib" not in startup and log.is_file():
        startup = {
            **startup,
            **{k: v for k, v in phases(log.read_text(errors="replace")).items() if k.endswith("_gib")},
        }
    return startup


def _figures(md: MethodData) -> dict[str, Any]:
    server = md.record.server
    startup = _startup(md)
    return {
        "ready_s": (md.record.timings or {}).get("server_ready"),
        "weights_gib": startup.get("weights_gib"),
        "cuda_graph_gib": startup.get("cuda_graph_gib"),
        "kv_cache_gib": startup.get("kv_cache_gib"),
        "kv_cache_tokens": server.kv_cache_tokens if server else None,
        "compile_cache": startup.get("compile_cache"),
    }


def cost_rows(run: RunData) -> list[StartCostRow]:
    """One row per method, its baseline's figures beside its own (a baseline's row compares with nothing)."""
    rows: list[StartCostRow] = []
    for md in run.methods.values():
        mine = _figures(md)
        base = run.methods.get(md.baseline or "")
        theirs = _figures(base) if base else {}
        tokens, base_tokens = mine["kv_cache_tokens"], theirs.get("kv_cache_tokens")
        rows.append(
            {
                "method": md.name,
                "label": md.display_name,
                "baseline": md.baseline,
                "compile_cache": mine["compile_cache"],
                "ready_s": mine["ready_s"],  # FIGURES, each beside its baseline's
                "baseline_ready_s": theirs.get("ready_s"),
                "weights_gib": mine["weights_gib"],
                "baseline_weights_gib": theirs.get("weights_gib"),
                "cuda_graph_gib": mine["cuda_graph_gib"],
                "baseline_cuda_graph_gib": theirs.get("cuda_graph_gib"),
                "kv_cache_gib": mine["kv_cache_gib"],
                "baseline_kv_cache_gib": theirs.get("kv_cache_gib"),
                "kv_cache_tokens": tokens,
                "baseline_kv_cache_tokens": base_tokens,
                "kv_cache_loss": (1 - tokens / base_tokens) if tokens and base_tokens else None,
            }
        )
    return rows


def _beside(r: StartCostRow, mine: Any, theirs: Any, digits: int) -> str:
    """A figure of the row with its difference from the baseline's (`theirs`) in brackets."""
    if not r["baseline"] or mine is None or theirs is None:
        return num(mine, digits)
    return f"{num(mine, digits)} ({'+' if mine >= theirs else ''}{num(mine - theirs, digits)})"


def cost_table(rep: Report) -> list[Block]:
    rows = rep.start_costs
    if not any(r["ready_s"] is not None or r["weights_gib"] is not None for r in rows):
        return []
    return [
        ("h2", "What speculation costs before the first request"),
        (
            "table",
            [
                "method",
                "vs",
                "ready s",
                "torch.compile cache",
                "checkpoints GiB",
                "CUDA graphs GiB",
                "KV cache GiB",
                "KV cache tokens",
                "KV loss",
            ],
            [
                [
                    label(r),
                    r["baseline"] or "—",
                    _beside(r, r["ready_s"], r["baseline_ready_s"], 1),
                    r["compile_cache"] or "n/a",
                    _beside(r, r["weights_gib"], r["baseline_weights_gib"], 2),
                    _beside(r, r["cuda_graph_gib"], r["baseline_cuda_graph_gib"], 2),
                    _beside(r, r["kv_cache_gib"], r["baseline_kv_cache_gib"], 2),
                    _beside(r, r["kv_cache_tokens"], r["baseline_kv_cache_tokens"], 0),
                    pct(r["kv_cache_loss"]) if r["baseline"] else "—",
                ]
                for r in rows
            ],
        ),
        (
            "p",
            "Each figure of a method with its difference from its baseline's in brackets. ready = from "
            "starting the server until it answered (a start that found its torch.compile graphs in the "
            "cache, 'hit', is the cached start; 'miss' the first); checkpoints = the weights loaded, target "
            "and drafter; CUDA graphs = what capture took; KV cache = the memory and tokens left for it "
            "(on the CPU the memory is fixed by VLLM_CPU_KVCACHE_SPACE). From each server's own log; n/a "
            "where it does not say (a bundle from before these were read, or an eager start).",
        ),
    ]
