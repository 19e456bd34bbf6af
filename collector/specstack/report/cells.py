"""The bench cells of one method and task: one row per `vllm bench serve` repeat, read from the raw bench JSON (the
summary's copy if the file is gone), with the window's counters, the per-request stall and burst reads and goodput;
report/speed.py and compare/ build their figures from these rows."""

from __future__ import annotations

import json
from typing import Any

from specstack.figures import chunks as stream
from specstack.figures import stats as st
from specstack.measure import per_request
from specstack.results.reader import MethodData
from specstack.results.summary import BenchCell, Window

METRICS = ("tpot", "itl", "ttft", "e2el")
PERCENTILES = (50, 95, 99)
PREEMPTIONS = "vllm:num_preemptions"
TPOT_DEGENERATE = 0.1  # decode time (TPOT p50 x (tokens - 1)) under a tenth of E2EL p50: the answer came in a burst


def tpot_degenerate(cell: dict[str, Any]) -> bool:
    """Bench's TPOT is (E2EL - TTFT) / (tokens - 1): when a starved client reads a whole answer at once, TTFT
    swallows the decode time and TPOT is about 0 (seen on 2 CPU cores: 0.002 ms against 1 ms per token)."""
    tpot, e2el, out, n = (
        cell.get("p50_tpot_ms"),
        cell.get("p50_e2el_ms"),
        cell.get("total_output_tokens"),
        cell.get("completed"),
    )
    if tpot is None or not e2el or not out or not n or out <= n:
        return False
    degenerate: bool = tpot * (out / n - 1) < TPOT_DEGENERATE * e2el
    return degenerate


def _counter(windows: list[Window], cell: BenchCell, name: str) -> float | None:
    for w in windows:
        # sessions share window names: the repeat (a merged session's index) tells them apart
        if w.name == cell.window and w.repeat == cell.repeat:
            return ((w.counters or {}).get("counters") or {}).get(name)
    return None


def bench_cells(md: MethodData, task: str) -> list[dict[str, Any]]:
    """One row per bench repeat, read from the raw bench JSON (the summary's copy if the file is gone)."""
    rows = []
    for cell in md.figures(task).cells:
        raw = md.bench_file(cell.file) if cell.file else None
        src = raw if raw is not None else cell.to_json()  # bench's figures under bench's names, either way
        c, r = cell.concurrency, cell.repeat
        row: dict[str, Any] = {
            "method": md.name,
            "task": task,
            "load": cell.load or "concurrency",
            "concurrency": c,
            "request_rate": cell.request_rate,
            "repeat": r,
            "session": cell.session,
            "status": cell.status,
            "file": cell.file,
            "source": "bench json" if raw is not None else "summary",
            "completed": src.get("completed"),
            "failed": src.get("failed"),
            "total_output_tokens": src.get("total_output_tokens"),
            "duration_s": src.get("duration"),
            "output_throughput": src.get("output_throughput"),
            "request_throughput": src.get("request_throughput"),
        }
        for m in METRICS:
            row[f"mean_{m}_ms"] = src.get(f"mean_{m}_ms")
            for p in PERCENTILES:
                value = src.get(f"p{p}_{m}_ms")
                if value is None and p == 50:
                    value = src.get(f"median_{m}_ms")
                row[f"p{p}_{m}_ms"] = value
        row["spec_decode_acceptance_length"] = src.get("spec_decode_acceptance_length")
        rate = src.get("spec_decode_acceptance_rate")  # bench writes percent (the summary's copy: a fraction)
        row["spec_decode_acceptance_rate"] = rate / 100 if rate is not None else src.get("acceptance_rate")
        row["spec_decode_draft_tokens"] = src.get("spec_decode_draft_tokens")
        row["spec_decode_num_drafts"] = src.get("spec_decode_num_drafts")
        row["spec_decode_accepted_tokens"] = src.get("spec_decode_accepted_tokens")
        # every answer is as long as asked (--ignore-eos; checked against the counters): its first token comes
        # from the prefill, the rest from decode passes, which is what TPOT times
        decode = (
            None
            if row["total_output_tokens"] is None or row["completed"] is None
            else row["total_output_tokens"] - row["completed"]
        )
        row["tokens_per_target_pass"] = st.tokens_per_pass(
            decode, row["spec_decode_num_drafts"], row["spec_decode_accepted_tokens"]
        )
        row["drafting_share"] = st.drafting_share(
            decode, row["spec_decode_num_drafts"], row["spec_decode_accepted_tokens"]
        )
        row["preemptions"] = _counter(md.record.window_list, cell, PREEMPTIONS)
        _per_request(row, per_request.cell_figures(raw, c) if raw is not None else cell.per_request)
        counts = stream.stream_chunks(raw)  # the summary's copy keeps no chunk list: n/a without the raw file
        row["streamed_output_tokens"] = counts["output_tokens"] if counts else None
        row["stream_chunks"] = counts["chunks"] if counts else None
        row["tokens_per_chunk"] = stream.tokens_per_chunk([counts])
        row.update(_goodput(cell.goodput))
        rows.append(row)
    _slower_than_serial(rows)
    return rows


def _per_request(row: dict[str, Any], fig: dict[str, Any] | None) -> None:
    """The cell's stall signals and burst reads from bench's per-request data; without it (a bundle from before
    --save-detailed) TPOT degeneracy falls back to the aggregate rule and stalls are unknown (None)."""
    fig = fig or {}
    row["per_request_data"] = bool(fig)
    for k in (
        "max_send_pause_ms",
        "send_pauses",
        "ttft_outliers",
        "e2el_outliers",
        "burst_requests",
        "burst_chunks",
        "chunks",
    ):
        row[k] = fig.get(k)
    row["stall"] = fig.get("stall") if fig else None
    row["tpot_degenerate"] = per_request.tpot_degenerate(fig) if fig else tpot_degenerate(row)
    row["itl_burst"] = per_request.itl_degenerate(fig) if fig else None
    row["degeneracy_rule"] = "per request" if fig else "aggregate"


def _slower_than_serial(rows: list[dict[str, Any]]) -> None:
    """Marks a closed-loop cell at c > 1 whose requests took longer than c=1's one after another would have."""
    serial = {
        r["repeat"]: r["mean_e2el_ms"]
        for r in rows
        if r["load"] == "concurrency" and r["concurrency"] == 1 and r["status"] == "ok"
    }
    reference = st.median(list(serial.values()))
    for r in rows:
        if r["load"] == "concurrency" and per_request.slower_than_serial(
            r["mean_e2el_ms"], r["concurrency"], serial.get(r["repeat"], reference)
        ):
            c1 = serial.get(r["repeat"], reference)
            r["stall"] = "; ".join(
                x
                for x in (r["stall"], f"mean E2EL {r['mean_e2el_ms']:.0f} ms > {r['concurrency']} × c=1's {c1:.0f} ms")
                if x
            )


def _goodput(g: dict[str, Any] | None) -> dict[str, Any]:
    """--slo: the cell's goodput as the summary computed it from bench's per-request results."""
    g = g or {}
    # the targets in the order the user gave them
    return {
        "slo": json.dumps(g["slo"]) if g.get("slo") else None,
        "good_requests": g.get("good"),
        "goodput_share": g.get("share"),
        "request_goodput": g.get("goodput"),
        "bench_request_goodput": g.get("bench_request_goodput"),
    }
