"""Speed against the baseline: one row per bench repeat (from the raw `vllm bench serve` JSON), and per method x
task x concurrency the medians over repeats, the speedups with their bootstrap intervals, and the crossover
concurrency where a method stops beating its baseline."""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping, Sequence
from typing import Any, cast

from specstack.figures import chunks as stream
from specstack.figures import stats as st
from specstack.figures.host_load import cell_cpu, host_load_per_core
from specstack.report import drafting_cost, marks
from specstack.report.cells import METRICS, PERCENTILES, bench_cells
from specstack.report.format import over_repeats
from specstack.report.rows import BenchCellRow, CrossoverRow, SpeedRow
from specstack.results.reader import MethodData, RunData, load_text

LOADS = ("concurrency", "rate")  # closed-loop cells keyed by concurrency, open-loop ones by request rate


def _by_load(cells: list[BenchCellRow], load: str) -> dict[float, list[BenchCellRow]]:
    """The cells of one kind of load, by their concurrency or their request rate (capacity probes are neither)."""
    out: dict[float, list[BenchCellRow]] = {}
    for cell in cells:
        if cell["load"] == load:
            out.setdefault(cell["concurrency" if load == "concurrency" else "request_rate"], []).append(cell)
    return out


def _ok(cells: list[BenchCellRow]) -> list[BenchCellRow]:
    return [c for c in cells if c["status"] == "ok"]


def _vals(cells: Sequence[Mapping[str, Any]], key: str) -> list[float]:
    return [c[key] for c in cells if c.get(key) is not None]


def _sum(cells: Sequence[Mapping[str, Any]], key: str) -> float | None:
    vals = _vals(cells, key)
    return sum(vals) if vals else None


def session_pairs(
    num: Sequence[Mapping[str, Any]], den: Sequence[Mapping[str, Any]], key: str
) -> list[tuple[float, float]]:
    """(num, den) values of the same session index: session i of a method ran next to session i of its
    baseline, after it in odd rounds and before it in even ones (--replicate sessions, ABBA)."""
    by_session = {c["session"]: c[key] for c in den if c.get("session") is not None and c.get(key) is not None}
    return [
        (c[key], by_session[c["session"]]) for c in num if c.get("session") in by_session and c.get(key) is not None
    ]


def sessions(md: MethodData | None) -> bool:
    return md is not None and md.replication.design == "sessions"


def _ratio(
    md: MethodData,
    base: MethodData | None,
    num: Sequence[Mapping[str, Any]],
    den: Sequence[Mapping[str, Any]],
    key: str,
) -> st.Interval:
    """median(num) / median(den) of one metric with its interval: session pairs resampled together when both
    sides ran as interleaved sessions (--replicate sessions), each side's repeats independently otherwise."""
    if sessions(md) and sessions(base):
        return st.paired_bootstrap_ratio(session_pairs(num, den, key))
    return st.bootstrap_ratio(_vals(num, key), _vals(den, key))


def design(md: MethodData, base: MethodData | None, n: int) -> str:
    """The replication a cell's figures rest on, in words."""
    if sessions(md):
        paired = " paired with the baseline's" if sessions(base) else ""
        return f"{n} server session{'s' if n != 1 else ''}{paired}"
    return f"{n} repeat{'s' if n != 1 else ''} in one server session"


def _itl_samples(cell: BenchCellRow) -> int | None:
    """ITL gaps in one repeat, estimated: (output tokens - requests) / tokens per streamed chunk (the bench
    acceptance length; 1 without drafts). The raw JSON keeps no per-chunk list unless --save-detailed."""
    out, n = cell.get("total_output_tokens"), cell.get("completed")
    if out is None or not n:
        return None
    return int((out - n) / (cell.get("spec_decode_acceptance_length") or 1))


ITL_DEGENERATE = 0.1  # an ITL p50 under a tenth of the TPOT p50: chunks arrived in bursts, the gaps say nothing


def itl_degenerate(itl: float | None, tpot: float | None, tpot_burst: bool) -> bool:
    """An ITL p50 that says nothing: under a tenth of the TPOT p50, or from a cell whose own TPOT is degenerate
    (a burst read: TPOT is ~0 too, so comparing with it never fires; seen: ITL 0.0025 ms, TPOT 0.001 ms)."""
    if itl is None:
        return False
    return tpot_burst or (tpot is not None and bool(tpot) and itl < ITL_DEGENERATE * tpot)


def cell_verdict(tpot: st.Interval, tput: st.Interval) -> str:
    """One word per cell, from the intervals only: "helped" needs both the TPOT and the throughput interval
    above 1.0x; a cell without an interval is "point only", whatever its point estimate says."""
    if tpot.point is None:
        return "n/a"
    if tpot.high is None or not tpot.has_interval:
        return "point only"
    if tpot.crosses_one:
        return "no clear difference"
    if tpot.high < 1.0:
        return "slower"
    if tput.low is not None and tput.has_interval and tput.low > 1.0:
        return "helped"
    return "faster per token only"


def speed_rows(run: RunData, load: str = "concurrency") -> list[SpeedRow]:
    """One row per method x task x concurrency (load "rate": x request rate, the open-loop cells): medians over
    its repeats and, for a speculative method, the speedups against the baseline cell of the same target, task
    and load."""
    rows: list[SpeedRow] = []
    for md in run.methods.values():
        base = run.methods.get(md.baseline or "")
        for task in run.tasks:
            mine = _by_load(bench_cells(md, task), load)
            theirs = _by_load(bench_cells(base, task), load) if base else {}
            for point in sorted(mine):
                rows.append(_cell_row(md, base, task, (load, point), mine[point], theirs.get(point, [])))
    if load == "concurrency":
        marks.mark_no_batching_gain(rows)
        marks.mark_slow_c1(rows)
    for r in rows:
        marks.mark_beyond_bound(r)
    return rows


def _cell_row(
    md: MethodData,
    base: MethodData | None,
    task: str,
    at: tuple[str, float],
    cells: list[BenchCellRow],
    base_cells: list[BenchCellRow],
) -> SpeedRow:
    """The named steps of one row; each adds its fields, `note` collects what a reader must know."""
    ok, bok = _ok(cells), _ok(base_cells)
    load, point = at
    # every column but the two closed-loop ones (speed_rows); those not known yet None, each filled by a step below
    row: SpeedRow = {
        "method": md.name,
        "label": md.display_name,
        "baseline": md.baseline,
        "task": task,
        "load": load,
        "concurrency": point if load == "concurrency" else None,
        "request_rate": point if load == "rate" else None,
        "role": "spec" if md.baseline else "baseline",
        "comparable": md.comparable,
        "server_contradicted": bool(md.server_contradictions),
        "repeats": len(ok),
        "baseline_repeats": len(bok),
        "design": design(md, base if md.baseline else None, len(ok)),
        "cells_failed": len(cells) - len(ok),
        "output_throughput": st.median(_vals(ok, "output_throughput")),
        "baseline_output_throughput": st.median(_vals(bok, "output_throughput")),
        # the frontier and Little's law (report/load.py): served requests/s, mean E2EL, tokens per answer
        "request_throughput": st.median(_vals(ok, "request_throughput")),
        "e2el_mean_ms": st.median(_vals(ok, "mean_e2el_ms")),
        "tokens_per_request": st.median(
            [
                c_["total_output_tokens"] / c_["completed"]
                for c_ in ok
                if c_.get("total_output_tokens") and c_.get("completed")
            ]
        ),
        "tpot_p50_ms": None,
        "tpot_p95_ms": None,
        "tpot_p99_ms": None,
        "itl_p50_ms": None,
        "itl_p95_ms": None,
        "itl_p99_ms": None,
        "ttft_p50_ms": None,
        "ttft_p95_ms": None,
        "ttft_p99_ms": None,
        "e2el_p50_ms": None,
        "e2el_p95_ms": None,
        "e2el_p99_ms": None,
        "baseline_tpot_p50_ms": None,
        "requests_per_repeat": None,
        "itl_samples_per_repeat_est": None,
        "tpot_p95_unstable": None,
        "tpot_p99_unstable": None,
        "itl_p95_unstable": None,
        "itl_p99_unstable": None,
        "ttft_p95_unstable": None,
        "ttft_p99_unstable": None,
        "e2el_p95_unstable": None,
        "e2el_p99_unstable": None,
        "bench_acceptance_length": None,
        "bench_acceptance_rate": None,
        "tpot_speedup": None,
        "tpot_speedup_low": None,
        "tpot_speedup_high": None,
        "tpot_verdict": None,
        "throughput_speedup": None,
        "throughput_speedup_low": None,
        "throughput_speedup_high": None,
        "throughput_verdict": None,
        "e2el_speedup": None,
        "e2el_speedup_low": None,
        "e2el_speedup_high": None,
        "tpot_mean_speedup": None,
        "tpot_p95_speedup": None,
        "e2el_mean_speedup": None,
        "e2el_p95_speedup": None,
        "tpot_degenerate": None,
        "tpot_degenerate_method": None,
        "tpot_degenerate_baseline": None,
        "tpot_burst_method": None,
        "tpot_burst_baseline": None,
        "latency_basis": None,
        "latency_statistic": None,
        "latency_speedup": None,
        "latency_speedup_low": None,
        "latency_speedup_high": None,
        "latency_mean_speedup": None,
        "latency_p95_speedup": None,
        "tail_disagrees": None,
        "stall": None,
        "stalled": None,
        "beyond_bound": None,
        "verdict": None,
        "stability": None,
        "tpot_spread": None,
        "baseline_tpot_spread": None,
        "host_load_per_core": None,
        "baseline_host_load_per_core": None,
        "other_cpu_s": None,
        "other_cpu_share": None,
        "baseline_other_cpu_share": None,
        "bench_cpu_share": None,
        "baseline_bench_cpu_share": None,
        "host_busy": None,
        "client_bound": None,
        "itl_degenerate": None,
        "tokens_per_chunk": None,
        "itl_per_chunk": None,
        "itl_p50_per_token_ms": None,
        "tokens_per_target_pass": None,
        "drafting_share": None,
        "efficiency": None,
        "efficiency_verify_steps": None,
        "preemptions": None,
        "failed_requests": None,
        "kv_cache_tokens": None,
        "kv_cache_loss": None,
        "note": None,
        "free_drafting_tpot_ms": None,
        "pass_ms": None,
        "drafting_cost_ms_per_pass": None,
        "drafting_cost_share": None,
    }
    note: list[str] = []
    _stalls(row, ok, bok, note)
    _percentiles(row, ok, bok)
    tpot, e2el, tput = _speedups(row, md, base, ok, bok, note)
    latency = _latency_verdict(row, md, ok, bok, tpot, e2el, tput)
    _host_load_gate(row, md, base, cells, base_cells)
    _efficiency(row, md, ok, tpot, note)
    drafting_cost.add_to_row(row)
    _kv_and_failures(row, md, base, cells)
    if not md.comparable:
        note.append("NOT COMPARABLE: synthetic rejection sampling")
    if md.speculative and row["bench_acceptance_length"] is None and ok:
        note.append("bench saw no drafts")
    row["latency_speedup"], row["latency_speedup_low"], row["latency_speedup_high"] = (
        latency.point,
        latency.low,
        latency.high,
    )
    row["note"] = "; ".join(note) or None
    return row


def _by_name(row: SpeedRow) -> MutableMapping[str, Any]:
    """The row, to write the columns named at run time (METRICS x PERCENTILES, METRICS x (95, 99), the mean and
    p95 ratios): each is a declared SpeedRow field (tests/report/test_rows.py holds them equal to the names
    generated), which mypy cannot see through an f-string."""
    return cast(MutableMapping[str, Any], row)


def _stalls(row: SpeedRow, ok: list[BenchCellRow], bok: list[BenchCellRow], note: list[str]) -> None:
    """A stall in a repeat of either side marks the row and so every ratio built on it (measure/per_request.py);
    None: no repeat of either side kept per-request data, so nothing says whether one stalled."""
    # a spec row names the side that stalled; a baseline's row is its own cells only ("r0", not "method r0")
    sides = (("method ", ok), ("baseline ", bok)) if row["role"] == "spec" else (("", ok),)
    found = [f"{side}r{c_['repeat']}: {c_['stall']}" for side, cells in sides for c_ in cells if c_.get("stall")]
    known = any(c_.get("per_request_data") for c_ in ok + bok)
    row["stall"] = "; ".join(found) or None
    row["stalled"] = bool(found) if known or found else None
    if found:
        note.append("⚠ stall (" + row["stall"] + "): every ratio of this row rests on it")


def _percentiles(row: SpeedRow, ok: list[BenchCellRow], bok: list[BenchCellRow]) -> None:
    """Medians over repeats of every latency percentile, with the tail percentiles too thin to trust flagged."""
    for m in METRICS:
        for p in PERCENTILES:
            _by_name(row)[f"{m}_p{p}_ms"] = st.median(_vals(ok, f"p{p}_{m}_ms"))
    row["baseline_tpot_p50_ms"] = st.median(_vals(bok, "p50_tpot_ms"))
    n_req = min(_vals(ok, "completed"), default=None)
    n_itl = min((x for x in (_itl_samples(c_) for c_ in ok) if x is not None), default=None)
    row["requests_per_repeat"] = n_req
    row["itl_samples_per_repeat_est"] = n_itl
    for m in METRICS:
        n = n_itl if m == "itl" else n_req
        for p in (95, 99):
            _by_name(row)[f"{m}_p{p}_unstable"] = st.unstable(p, n)
    row["bench_acceptance_length"] = st.median(_vals(ok, "spec_decode_acceptance_length"))
    row["bench_acceptance_rate"] = st.median(_vals(ok, "spec_decode_acceptance_rate"))
    _per_chunk(row, ok)
    if any(c_.get("per_request_data") for c_ in ok):  # the chunk gaps themselves say whether they were bursts
        row["itl_degenerate"] = any(c_.get("itl_burst") or c_.get("tpot_degenerate") for c_ in ok)
    else:
        row["itl_degenerate"] = itl_degenerate(
            row["itl_p50_ms"], row["tpot_p50_ms"], any(c_.get("tpot_degenerate") for c_ in ok)
        )


def _per_chunk(row: SpeedRow, ok: list[BenchCellRow]) -> None:
    """Tokens per streamed chunk over the repeats (figures/chunks.py) and the ITL p50 per token: a chunk of a
    speculative step carries every token it accepted, so ITL is per chunk (None: no per-request data, unknown)."""
    per_chunk = stream.tokens_per_chunk(
        [
            {"output_tokens": c_["streamed_output_tokens"], "chunks": c_["stream_chunks"]}
            for c_ in ok
            if c_.get("stream_chunks")
        ]
    )
    row["tokens_per_chunk"] = per_chunk
    row["itl_per_chunk"] = None if per_chunk is None else stream.multi_token(per_chunk)
    itl = row.get("itl_p50_ms")
    row["itl_p50_per_token_ms"] = itl / per_chunk if itl is not None and per_chunk else None


def _speedups(
    row: SpeedRow,
    md: MethodData,
    base: MethodData | None,
    ok: list[BenchCellRow],
    bok: list[BenchCellRow],
    note: list[str],
) -> tuple[st.Interval, st.Interval, st.Interval]:
    """TPOT, E2EL (baseline / method: > 1 = faster) and throughput (method / baseline) with their intervals. A
    TPOT ratio is never formed from a degenerate TPOT (a burst read on either side): it would say 227× or 0.00×.
    Beside each median latency ratio, the ratios of the means and of the p95s: a median hides the tail."""
    # per side, so a sound TPOT is never marked for its baseline's burst; the row's flag is either side's
    row["tpot_degenerate_method"] = any(c_.get("tpot_degenerate") for c_ in ok)
    row["tpot_degenerate_baseline"] = any(c_.get("tpot_degenerate") for c_ in bok) if md.baseline else None
    row["tpot_degenerate"] = row["tpot_degenerate_method"] or bool(row["tpot_degenerate_baseline"])
    row["tpot_burst_method"] = _bursts(ok) if row["tpot_degenerate_method"] else None
    row["tpot_burst_baseline"] = _bursts(bok) if row["tpot_degenerate_baseline"] else None
    none = st.Interval(None, None, None, len(ok), len(bok))
    if md.baseline:
        tpot = none if row["tpot_degenerate"] else _ratio(md, base, bok, ok, "p50_tpot_ms")
        e2el = _ratio(md, base, bok, ok, "p50_e2el_ms")
        tput = _ratio(md, base, ok, bok, "output_throughput")
        for m in ("tpot", "e2el"):
            for stat in ("mean", "p95"):
                usable = not (m == "tpot" and row["tpot_degenerate"])
                _by_name(row)[f"{m}_{stat}_speedup"] = (
                    _ratio(md, base, bok, ok, f"{stat}_{m}_ms").point if usable else None
                )
        if base is None:
            note.append(f"baseline {md.baseline!r} missing or failed: no ratios")
        elif not bok:
            note.append(f"baseline has no {load_text(row)} cell")
    else:
        tpot = e2el = tput = st.Interval(None, None, None, len(ok), len(ok))
        _by_name(row).update({f"{m}_{stat}_speedup": None for m in ("tpot", "e2el") for stat in ("mean", "p95")})
    tpot_verdict = (
        "reference"
        if not md.baseline
        else "degenerate: no ratio"
        if row["tpot_degenerate"]
        else tpot.verdict("faster", "slower")
    )
    row["tpot_speedup"], row["tpot_speedup_low"], row["tpot_speedup_high"] = tpot.point, tpot.low, tpot.high
    row["tpot_verdict"] = tpot_verdict
    row["e2el_speedup"], row["e2el_speedup_low"], row["e2el_speedup_high"] = e2el.point, e2el.low, e2el.high
    row["throughput_speedup"], row["throughput_speedup_low"] = tput.point, tput.low
    row["throughput_speedup_high"] = tput.high
    row["throughput_verdict"] = tput.verdict("higher", "lower") if md.baseline else "reference"
    return tpot, e2el, tput


def _latency_verdict(
    row: SpeedRow,
    md: MethodData,
    ok: list[BenchCellRow],
    bok: list[BenchCellRow],
    tpot: st.Interval,
    e2el: st.Interval,
    tput: st.Interval,
) -> st.Interval:
    """The latency the verdict rests on, the repeats' spread and stability, and the verdict word."""
    # TPOT is only a per-token time when the tokens arrived one by one; answers that arrived in a burst (a
    # starved client) leave E2EL, at fixed output length, as the latency to compare
    basis, key, latency = ("E2EL", "p50_e2el_ms", e2el) if row["tpot_degenerate"] else ("TPOT", "p50_tpot_ms", tpot)
    row["latency_basis"] = basis
    row["latency_statistic"] = f"p50 over requests, {over_repeats(len(ok))}"
    row["latency_mean_speedup"] = row.get(f"{basis.lower()}_mean_speedup")
    row["latency_p95_speedup"] = row.get(f"{basis.lower()}_p95_speedup")
    # a p95 the report marks † (too few requests beyond it in a repeat, on either side) decides nothing
    p95_stable = not st.unstable(95, min(_vals(ok + bok, "completed"), default=None))
    row["tail_disagrees"] = _tail_disagrees(
        latency.point,
        row["latency_mean_speedup"],
        row["latency_p95_speedup"] if p95_stable else None,
        row.get("throughput_speedup"),
    )
    row["tpot_spread"] = st.relative_mad(_vals(ok, key))
    row["baseline_tpot_spread"] = st.relative_mad(_vals(bok, key)) if md.baseline else None
    row["stability"] = st.stability(_vals(ok, key), _vals(bok, key)) if md.baseline else st.stability(_vals(ok, key))
    row["verdict"] = cell_verdict(latency, tput) if md.baseline else "reference"
    return latency


TAIL_MARGIN = 0.05  # a mean or p95 ratio this far on the other side of 1.0× than the median's disagrees with it


def _tail_disagrees(median: float | None, *others: float | None) -> bool | None:
    """True when the median latency ratio says faster (or slower) and the mean, p95 or throughput ratio says the
    opposite by more than TAIL_MARGIN: the median hides a tail (seen: E2EL 1.02× where mean and tput were 0.87×)."""
    seen = [x for x in others if x is not None]
    if median is None or not seen:
        return None
    if median >= 1.0:
        return any(x < 1.0 - TAIL_MARGIN for x in seen)
    return any(x > 1.0 + TAIL_MARGIN for x in seen)


def _host_load_gate(
    row: SpeedRow,
    md: MethodData,
    base: MethodData | None,
    cells: list[BenchCellRow],
    base_cells: list[BenchCellRow],
) -> None:
    """Who else used the CPU at the cell's bench windows, on both sides (measure/cpu_share.py): a verdict measured
    while other processes took the server's cores ("busy host") or while the bench client saturated its core
    ("client-bound") is marked, never silently trusted (None: not measured, not 0). The 1-minute load per core
    stays as data only: the measured system alone keeps it near 1 per core on a CPU server."""
    row["host_load_per_core"] = host_load_per_core(md.record.window_list, cells)
    row["baseline_host_load_per_core"] = (
        host_load_per_core(base.record.window_list, base_cells) if md.baseline and base else None
    )
    own = cell_cpu(md.record.window_list, cells)
    other = cell_cpu(base.record.window_list, base_cells) if md.baseline and base else None
    row["other_cpu_s"], row["other_cpu_share"], row["bench_cpu_share"] = own.other_s, own.other_share, own.bench_share
    row["baseline_other_cpu_share"] = other.other_share if other else None
    row["baseline_bench_cpu_share"] = other.bench_share if other else None
    row["host_busy"] = st.host_busy(row["other_cpu_share"], row["baseline_other_cpu_share"])
    row["client_bound"] = st.client_bound(row["bench_cpu_share"], row["baseline_bench_cpu_share"])


def _efficiency(row: SpeedRow, md: MethodData, ok: list[BenchCellRow], tpot: st.Interval, note: list[str]) -> None:
    """The TPOT speedup against what a free drafter allows: tokens per target pass over all decode passes, and
    over verify steps only (the two differ exactly when the drafter skips steps: ngram, suffix)."""
    bound = st.median(_vals(ok, "tokens_per_target_pass"))
    row["tokens_per_target_pass"] = bound if md.speculative else None
    row["drafting_share"] = st.median(_vals(ok, "drafting_share")) if md.speculative else None
    usable = tpot.point if md.speculative and not row["tpot_degenerate"] else None  # a degenerate TPOT has none
    row["efficiency"] = st.efficiency(usable, bound)
    row["efficiency_verify_steps"] = st.efficiency(usable, row["bench_acceptance_length"])
    if row["efficiency"] is not None and row["efficiency"] > 1.0:
        # the bound holds for any drafter: beating it means the TPOT figures are off, not the method
        note.append(
            "efficiency above 100 %: the TPOT speedup beats what a free drafter allows, so the TPOT "
            "figures are off (noise, partly burst-delivered answers)"
        )
    if row["tpot_degenerate"]:
        sides = [
            (name, burst)
            for name, burst in (
                ("the method's", row["tpot_burst_method"]),
                ("the baseline's", row["tpot_burst_baseline"]),
            )
            if burst
        ]
        if not md.baseline:
            where = f" ({sides[0][1]})"
        elif len(sides) == 2:
            where = f" on both sides (method: {sides[0][1]}; baseline: {sides[1][1]})"
        else:
            where = f" on {sides[0][0]} side ({sides[0][1]})"
        note.append(f"TPOT degenerate{where}" + (": verdict on E2EL, no efficiency" if md.baseline else ""))


def _bursts(cells: list[BenchCellRow]) -> str:
    """How much of a side was read in a burst: "4 of 16 requests read in a burst" from bench's per-request data,
    else the aggregate rule's verdict (a bundle without it)."""
    known = [c_ for c_ in cells if c_.get("per_request_data")]
    if not known:
        return "by the aggregate rule: answers arrived in a burst"
    n = sum(c_.get("burst_requests") or 0 for c_ in known)
    return f"{n} of {sum(c_.get('completed') or 0 for c_ in known)} requests read in a burst"


def _kv_and_failures(row: SpeedRow, md: MethodData, base: MethodData | None, cells: list[BenchCellRow]) -> None:
    kv = md.record.server_facts.kv_cache_tokens
    base_kv = base.record.server_facts.kv_cache_tokens if base else None
    row["preemptions"] = _sum(cells, "preemptions")
    row["failed_requests"] = _sum(cells, "failed")
    row["kv_cache_tokens"] = kv
    row["kv_cache_loss"] = st.kv_loss(kv, base_kv) if md.baseline else None


def crossover_rows(speed: list[SpeedRow]) -> list[CrossoverRow]:
    rows: list[CrossoverRow] = []
    keys = sorted({(r["method"], r["task"]) for r in speed if r["role"] == "spec"})
    for method, task in keys:
        mine = [r for r in speed if r["method"] == method and r["task"] == task]
        tpot = st.crossover(
            {r["concurrency"]: r["latency_speedup"] for r in mine},
            {r["concurrency"]: r["latency_speedup_low"] for r in mine},
        )
        # the statistic each concurrency was judged on, named: a column of E2EL verdicts is not a TPOT crossover
        on_e2el = [r["concurrency"] for r in mine if r["latency_basis"] == "E2EL"]
        basis = (
            "TPOT"
            if not on_e2el
            else "E2EL"
            if len(on_e2el) == len(mine)
            else "TPOT, E2EL at c=" + ", ".join(f"{c:g}" for c in on_e2el)
        )
        if on_e2el:
            tpot["text"] += (
                " (on E2EL: TPOT degenerate at every concurrency)"
                if basis == "E2EL"
                else f" (on E2EL at c={', '.join(f'{c:g}' for c in on_e2el)}: TPOT degenerate there)"
            )
        tput = st.crossover(
            {r["concurrency"]: r["throughput_speedup"] for r in mine},
            {r["concurrency"]: r["throughput_speedup_low"] for r in mine},
        )
        # a verdict over the concurrencies rests on every cell of them: a marked one is named here too
        stalled = sorted(r["concurrency"] for r in mine if r.get("stalled"))
        on_latency, on_throughput = marks.crossover_marks(mine)
        tpot["text"] += on_latency
        tput["text"] += on_throughput
        rows.append(
            {
                "method": method,
                "label": mine[0]["label"],
                "baseline": mine[0]["baseline"],
                "task": task,
                "comparable": mine[0]["comparable"],
                "server_contradicted": mine[0]["server_contradicted"],
                "tpot_kind": tpot["kind"],
                "tpot_crossover_concurrency": tpot["concurrency"],
                "tpot_text": tpot["text"],
                "latency_basis": basis,
                "throughput_kind": tput["kind"],
                "throughput_crossover_concurrency": tput["concurrency"],
                "throughput_text": tput["text"],
                "stalled_concurrencies": ",".join(f"{c:g}" for c in stalled) or None,
            }
        )
    return rows
