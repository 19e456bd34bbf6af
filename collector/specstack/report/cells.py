"""The bench cells of one method and task: one row per `vllm bench serve` repeat, read from the raw bench JSON (the
summary's copy if the file is gone), with the window's counters, the per-request stall and burst reads and goodput;
report/speed.py and compare/ build their figures from these rows."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from specstack.figures import chunks as stream
from specstack.figures import stats as st
from specstack.measure import per_request
from specstack.report.rows import BenchCellRow
from specstack.results.reader import MethodData
from specstack.results.summary import BenchCell, Window

METRICS = ("tpot", "itl", "ttft", "e2el")
PERCENTILES = (50, 95, 99)
PREEMPTIONS = "vllm:num_preemptions"
TPOT_DEGENERATE = 0.1  # decode time (TPOT p50 x (tokens - 1)) under a tenth of E2EL p50: the answer came in a burst


def tpot_degenerate(cell: Mapping[str, Any]) -> bool:
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


def _percentile(src: Mapping[str, Any], p: int, metric: str) -> Any:
    """Bench's p`p` of a latency (an older bench names its p50 the median)."""
    value = src.get(f"p{p}_{metric}_ms")
    return src.get(f"median_{metric}_ms") if value is None and p == 50 else value


def bench_cells(md: MethodData, task: str) -> list[BenchCellRow]:
    """One row per bench repeat, read from the raw bench JSON (the summary's copy if the file is gone)."""
    rows: list[BenchCellRow] = []
    for cell in md.figures(task).cells:
        raw = md.bench_file(cell.file) if cell.file else None
        src = raw if raw is not None else cell.to_json()  # bench's figures under bench's names, either way
        c, r = cell.concurrency, cell.repeat
        # every answer is as long as asked (--ignore-eos; checked against the counters): its first token comes
        # from the prefill, the rest from decode passes, which is what TPOT times
        out, done = src.get("total_output_tokens"), src.get("completed")
        decode = None if out is None or done is None else out - done
        drafts, accepted = src.get("spec_decode_num_drafts"), src.get("spec_decode_accepted_tokens")
        rate = src.get("spec_decode_acceptance_rate")  # bench writes percent (the summary's copy: a fraction)
        counts = stream.stream_chunks(raw)  # the summary's copy keeps no chunk list: n/a without the raw file
        goodput = _goodput(cell.goodput)
        row: BenchCellRow = {
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
            "completed": done,
            "failed": src.get("failed"),
            "total_output_tokens": out,
            "duration_s": src.get("duration"),
            "output_throughput": src.get("output_throughput"),
            "request_throughput": src.get("request_throughput"),
            "mean_tpot_ms": src.get("mean_tpot_ms"),  # METRICS x (mean, PERCENTILES): bench's latencies
            "p50_tpot_ms": _percentile(src, 50, "tpot"),
            "p95_tpot_ms": _percentile(src, 95, "tpot"),
            "p99_tpot_ms": _percentile(src, 99, "tpot"),
            "mean_itl_ms": src.get("mean_itl_ms"),
            "p50_itl_ms": _percentile(src, 50, "itl"),
            "p95_itl_ms": _percentile(src, 95, "itl"),
            "p99_itl_ms": _percentile(src, 99, "itl"),
            "mean_ttft_ms": src.get("mean_ttft_ms"),
            "p50_ttft_ms": _percentile(src, 50, "ttft"),
            "p95_ttft_ms": _percentile(src, 95, "ttft"),
            "p99_ttft_ms": _percentile(src, 99, "ttft"),
            "mean_e2el_ms": src.get("mean_e2el_ms"),
            "p50_e2el_ms": _percentile(src, 50, "e2el"),
            "p95_e2el_ms": _percentile(src, 95, "e2el"),
            "p99_e2el_ms": _percentile(src, 99, "e2el"),
            "spec_decode_acceptance_length": src.get("spec_decode_acceptance_length"),
            "spec_decode_acceptance_rate": rate / 100 if rate is not None else src.get("acceptance_rate"),
            "spec_decode_draft_tokens": src.get("spec_decode_draft_tokens"),
            "spec_decode_num_drafts": drafts,
            "spec_decode_accepted_tokens": accepted,
            "tokens_per_target_pass": st.tokens_per_pass(decode, drafts, accepted),
            "drafting_share": st.drafting_share(decode, drafts, accepted),
            "preemptions": _counter(md.record.window_list, cell, PREEMPTIONS),
            "per_request_data": None,  # these ten: _per_request, below, once the latencies are in
            "max_send_pause_ms": None,
            "send_pauses": None,
            "ttft_outliers": None,
            "e2el_outliers": None,
            "burst_requests": None,
            "burst_chunks": None,
            "chunks": None,
            "stall": None,
            "streamed_output_tokens": counts["output_tokens"] if counts else None,
            "stream_chunks": counts["chunks"] if counts else None,
            "tokens_per_chunk": stream.tokens_per_chunk([counts]),
            "tpot_degenerate": None,
            "itl_burst": None,
            "degeneracy_rule": None,
            "slo": goodput["slo"],
            "good_requests": goodput["good_requests"],
            "goodput_share": goodput["goodput_share"],
            "request_goodput": goodput["request_goodput"],
            "bench_request_goodput": goodput["bench_request_goodput"],
        }
        _per_request(row, per_request.cell_figures(raw, c) if raw is not None else cell.per_request)
        rows.append(row)
    _slower_than_serial(rows)
    return rows


def _per_request(row: BenchCellRow, fig: dict[str, Any] | None) -> None:
    """The cell's stall signals and burst reads from bench's per-request data; without it (a bundle from before
    --save-detailed) TPOT degeneracy falls back to the aggregate rule and stalls are unknown (None)."""
    fig = fig or {}
    row["per_request_data"] = bool(fig)
    row["max_send_pause_ms"] = fig.get("max_send_pause_ms")
    row["send_pauses"] = fig.get("send_pauses")
    row["ttft_outliers"] = fig.get("ttft_outliers")
    row["e2el_outliers"] = fig.get("e2el_outliers")
    row["burst_requests"] = fig.get("burst_requests")
    row["burst_chunks"] = fig.get("burst_chunks")
    row["chunks"] = fig.get("chunks")
    row["stall"] = fig.get("stall") if fig else None
    row["tpot_degenerate"] = per_request.tpot_degenerate(fig) if fig else tpot_degenerate(row)
    row["itl_burst"] = per_request.itl_degenerate(fig) if fig else None
    row["degeneracy_rule"] = "per request" if fig else "aggregate"


def _slower_than_serial(rows: list[BenchCellRow]) -> None:
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
