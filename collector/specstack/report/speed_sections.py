"""The report's speed blocks of one task: the speed table against the baseline, the latency percentiles with their
footnotes, and the crossover concurrency (the rows come computed from report/speed.py; only their text is made here)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from specstack.figures import stats as st
from specstack.measure import per_request
from specstack.report import marks
from specstack.report.cells import PERCENTILES
from specstack.report.format import interval, num, over_repeats, pct, times
from specstack.report.itl_chunks import per_chunk_cell, per_chunk_note
from specstack.report.render import Block
from specstack.report.rows import SpeedRow
from specstack.report.verdicts import label as _label
from specstack.report.verdicts import legend

if TYPE_CHECKING:
    from specstack.report.contents import Report


def _pcts(row: Mapping[str, Any], m: str) -> str:  # a SpeedRow: its columns of metric m
    parts = []
    for p in PERCENTILES:
        v = num(row.get(f"{m}_p{p}_ms"), 1)
        if p != 50 and row.get(f"{m}_p{p}_unstable") and v != "n/a":
            v += "†"
        parts.append(v)
    return " / ".join(parts)


def _bound(row: SpeedRow) -> str:
    """Tokens per target pass, with the share of passes that verified a draft when not all of them did."""
    if row.get("tokens_per_target_pass") is None:
        return "n/a"
    share = row.get("drafting_share")
    return num(row["tokens_per_target_pass"]) + ("" if share is None else f" ({pct(share, 0)})")


def _efficiency(row: SpeedRow) -> str:
    """Efficiency against the all-passes bound; against verify steps beside it only where the drafter skipped
    passes (share under 100 %): at 100 % the two bounds differ only by drafts counted past an answer's end, which
    the per-step figure would count as a gain."""
    text = pct(row.get("efficiency"), 0)
    other, share = row.get("efficiency_verify_steps"), row.get("drafting_share")
    if (
        other is not None
        and row.get("efficiency") is not None
        and share is not None
        and share < 0.995
        and abs(other - row["efficiency"]) >= 0.005
    ):
        text += f" ({pct(other, 0)} per verify step)"
    return text


def _spread(r: SpeedRow) -> str:
    """Relative MAD of the TPOT p50 over repeats, method / baseline; ⚠ past the stability gate."""
    parts = [pct(r["tpot_spread"], 0)] + ([pct(r["baseline_tpot_spread"], 0)] if r["role"] == "spec" else [])
    return " / ".join(parts) + (" ⚠" if r["stability"] == "unstable" else "")


def _stall_mark(r: SpeedRow) -> str:
    """The marks every ratio of the row carries (a stall, a slow c=1): report/marks.py decides them for all views."""
    return marks.suffix(r)


def _throughput_mark(r: SpeedRow) -> str:
    return marks.suffix(r, throughput=True)


def _beside(r: Mapping[str, Any], m: str) -> str:  # a SpeedRow: its ratios of metric m
    """The mean and p95 ratios beside a median ratio: a median hides the tail."""
    return f"; mean {times(r.get(f'{m}_mean_speedup'))}, p95 {times(r.get(f'{m}_p95_speedup'))}"


def _tpot_ratio(r: SpeedRow) -> str:
    """Never a ratio of degenerate figures: a burst read on either side leaves no per-token time to divide."""
    if r["role"] != "spec":
        return "—"
    if r["tpot_degenerate"]:
        return "no ratio ‡"
    return (
        times(r["tpot_speedup"])
        + interval(r["tpot_speedup_low"], r["tpot_speedup_high"])
        + _beside(r, "tpot")
        + _stall_mark(r)
    )


def _e2el_ratio(r: SpeedRow) -> str:
    if r["role"] != "spec":
        return "—"
    return (
        times(r["e2el_speedup"])
        + interval(r["e2el_speedup_low"], r["e2el_speedup_high"])
        + _beside(r, "e2el")
        + _stall_mark(r)
    )


def _itl(r: SpeedRow) -> str:
    return _pcts(r, "itl") + (" ‡" if r.get("itl_degenerate") else "")


def _other_cpu(r: SpeedRow) -> str:
    """The CPU other processes took in the method's busiest bench window of the row, ⚠ beyond the busy-host
    share (the mark on the verdict also counts the baseline's side)."""
    if r.get("other_cpu_share") is None:
        return "not measured"
    mark = " ⚠" if r["other_cpu_share"] > st.MAX_OTHER_CPU_SHARE else ""
    return f"{r['other_cpu_s']:.1f} ({r['other_cpu_share']:.1%}){mark}"


def _client_cpu(r: SpeedRow) -> str:
    if r.get("bench_cpu_share") is None:
        return "not measured"
    return f"{r['bench_cpu_share']:.0%}" + (" ⚠" if r["bench_cpu_share"] > st.CLIENT_SATURATED else "")


def speed_tables(rep: Report, task: str) -> list[Block]:
    out: list[Block] = []
    speed = [r for r in rep.speed if r["task"] == task]
    out.append(("h3", "Speed against the baseline (perf phase, fixed output length)"))
    ci = f"95 % CI if ≥ {st.MIN_REPEATS} repeats"
    out.append(
        (
            "table",
            [
                "method",
                "vs",
                "c",
                "N",
                "replication",
                "out tok/s",
                f"throughput × [{ci}]",
                "verdict",
                "TPOT p50 ms",
                f"TPOT speedup × (p50 [{ci}]; mean, p95)",
                "verdict",
                f"E2EL speedup × (p50 [{ci}]; mean, p95)",
                "latency spread (method / base)",
                "other processes' CPU (CPU-s, % of core-s)",
                "bench client CPU (% of a core)",
                "acc. length per verify step",
                "tokens per target pass (drafting steps)",
                "efficiency",
                "KV loss",
                "preempt.",
                "failed req.",
                "note",
            ],
            [
                [
                    _label(r),
                    r["baseline"] or "—",
                    r["concurrency"],
                    r["repeats"],
                    r.get("design") or "n/a",
                    num(r["output_throughput"], 1),
                    (
                        "—"
                        if r["role"] != "spec"
                        else times(r["throughput_speedup"])
                        + interval(r["throughput_speedup_low"], r["throughput_speedup_high"])
                        + _throughput_mark(r)
                    ),
                    r["throughput_verdict"],
                    num(r["tpot_p50_ms"]) + (" ‡" if _read_in_burst(r) else ""),
                    _tpot_ratio(r),
                    r["tpot_verdict"],
                    _e2el_ratio(r),
                    _spread(r),
                    _other_cpu(r),
                    _client_cpu(r),
                    num(r["bench_acceptance_length"]),
                    _bound(r),
                    _efficiency(r),
                    "—" if r["role"] != "spec" else pct(r["kv_cache_loss"]),
                    num(r["preemptions"], 0),
                    num(r["failed_requests"], 0),
                    r["note"] or "",
                ]
                for r in speed
            ],
        )
    )
    out.append(
        (
            "h3",
            f"Latency percentiles, ms (p50 / p95 / p99; {over_repeats(max((r['repeats'] for r in speed), default=0))})",
        )
    )
    out.append(
        (
            "table",
            [
                "method",
                "c",
                "N",
                "requests/repeat",
                "TPOT",
                "ITL (gap between streamed chunks)",
                "tokens per chunk",
                "TTFT",
                "E2EL",
            ],
            [
                [
                    _label(r),
                    r["concurrency"],
                    r["repeats"],
                    num(r["requests_per_repeat"]),
                    _pcts(r, "tpot"),
                    _itl(r),
                    per_chunk_cell(r),
                    _pcts(r, "ttft") + (" ‡" if _read_in_burst(r) else ""),
                    _pcts(r, "e2el"),
                ]
                for r in speed
            ],
        )
    )
    if any(r["tpot_degenerate"] for r in speed):
        out.append(
            (
                "p",
                '‡ TPOT degenerate (on a TPOT p50: in that row\'s own cells; on "no ratio": in the '
                "method's or the baseline's): in a repeat of the cell a request's chunks were "
                f"read in a burst straight after its first token (gaps under {per_request.BURST_GAP_MS:g} "
                f"ms, no engine step is that short) for more than {per_request.SWALLOWED_MAX:.0%} of its "
                "decode, so TTFT swallowed decode time and bench's TPOT = (E2EL − TTFT) ÷ (tokens − 1) "
                "is too small (a starved client reads a whole answer at once; seen: 0.002 ms against "
                "1 ms per token). From bench's per-request data (--save-detailed); a bundle without it "
                "uses the aggregate rule: TPOT p50 × (tokens − 1) under a tenth of E2EL p50. No TPOT "
                "ratio is printed for such a row, its verdict rests on E2EL at the same fixed output "
                "length, and it has no efficiency. On a TTFT: the row's own cells read answers in a burst, "
                "so its TTFT holds decode time too (TTFT ≈ E2EL for those requests): not a time to first "
                "token.",
            )
        )
    if any(r.get("stalled") for r in speed):
        out.append(
            (
                "p",
                "⚠ stall: in a repeat of the row (method or baseline) bench's per-request data shows a "
                "pause in sending (a request sent later than its free slot by more than "
                f"{per_request.SEND_PAUSE_SHARE:.0%} of the cell's median E2EL), a TTFT or E2EL outlier "
                f"(over {per_request.OUTLIER_FACTOR:g}× the cell's median and "
                f"{per_request.OUTLIER_FLOOR_MS:g} ms past it), or a c > 1 cell whose mean E2EL exceeds c × "
                "the c=1 cell's (slower than one after another). The host load average cannot see a "
                "sub-second stall; every ratio of the row rests on it. The row's note names the cell: "
                + "; ".join(f"{_label(r)} c={r['concurrency']}: {r['stall']}" for r in speed if r.get("stalled"))
                + ".",
            )
        )
    named = [
        text
        for text in legend(" ".join(_throughput_mark(r) for r in speed))
        if text.startswith(("⚠ beyond bound", "⚠ slow c=1"))
    ]  # the verdict legend's words, one source
    if named:
        out.append(("ul", named))
    if any(r["role"] == "spec" for r in speed):
        out.append(
            (
                "p",
                "ITL is the gap between streamed chunks, and a speculative step streams all the tokens it "
                "accepted in one chunk: for a speculative method ITL is per chunk, not per token, and is "
                "not comparable with the baseline's (the tokens per chunk column measures it). Compare "
                "methods by TPOT.",
            )
        )
    out += per_chunk_note(speed)
    if any(r.get("itl_degenerate") for r in speed):
        out.append(
            (
                "p",
                "‡ on ITL: degenerate, the chunks arrived in bursts (a starved client or server) and the "
                "gaps say nothing: the ITL p50 is under a tenth of the TPOT p50, or a repeat of the "
                "method's own cell has a degenerate TPOT (then its TPOT is no per-token time either, and "
                "the ITL cannot be checked against it).",
            )
        )
    return out


def _read_in_burst(r: SpeedRow) -> bool:
    """The row's own cells read answers in a burst (its TPOT is degenerate on its side, not only its baseline's)."""
    return bool(r.get("tpot_degenerate_method", r["tpot_degenerate"]))


def crossover_table(rep: Report, task: str) -> list[Block]:
    out: list[Block] = []
    cross = [r for r in rep.crossover if r["task"] == task]
    if cross:
        out.append(("h3", "Crossover concurrency (where a method stops beating the baseline)"))
        out.append(
            (
                "table",
                ["method", "vs", "latency (TPOT; E2EL where TPOT is degenerate)", "throughput"],
                [[_label(r), r["baseline"], r["tpot_text"], r["throughput_text"]] for r in cross],
            )
        )
    return out
