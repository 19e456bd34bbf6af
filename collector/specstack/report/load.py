"""The report's load figures: speed against the baseline per offered rate (the open-loop cells, --rates), the
crossover in rate, the capacity at the SLO (--capacity, figures/capacity.py), and the frontier of per-user speed
against system throughput over every cell, closed and open loop.

Frontier point (one per method × task × cell, medians over repeats): system tok/s = bench's output throughput;
per-user tok/s = 1000 ÷ TPOT p50, or, on a task where any cell's TPOT is degenerate (answers read in a burst), the
answer's tokens ÷ E2EL p50 for every cell of the task (one basis per task, so the points compare). "System
throughput at equal per-user speed" = the method's system tok/s ÷ the baseline's frontier (its Pareto points: no
other cell faster on both axes) interpolated linearly at the method's per-user speed; no extrapolation outside it.

Validity flags name points that measure queueing rather than decoding:
- queueing: TTFT p50 above TTFT_QUEUE_FACTOR × that of the method's lowest-load cell on the task (its smallest
  concurrency, else its lowest offered rate), named; the lowest-load cell itself never queues (at c=1 nothing
  waits), so where its TTFT is that far above a higher-load cell's it is flagged as slow at the lowest load;
- Little's law: mean requests in flight L = served req/s × mean E2EL; a closed-loop cell should hold its
  concurrency (L off by more than LITTLE_TOLERANCE: ramp-up and drain dominate the window); an open-loop cell
  should serve what was offered (served req/s below (1 − LITTLE_TOLERANCE) × the rate: a queue grew).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from specstack.figures import capacity
from specstack.figures import stats as st
from specstack.report import marks
from specstack.report.rows import CapacityRow, FrontierRow, LoadCrossoverRow, SpeedRow
from specstack.report.speed import speed_rows
from specstack.results.reader import RunData, load_text

TTFT_QUEUE_FACTOR = 3.0
LITTLE_TOLERANCE = 0.25


def rate_rows(run: RunData) -> list[SpeedRow]:
    """The report's speed rows of the open-loop cells, one per method × task × offered rate."""
    return speed_rows(run, "rate")


def rate_crossover_rows(rates: list[SpeedRow]) -> list[LoadCrossoverRow]:
    """Where a method stops beating its baseline as the offered rate grows (throughput and latency)."""
    rows: list[LoadCrossoverRow] = []
    for method, task in sorted({(r["method"], r["task"]) for r in rates if r["role"] == "spec"}):
        # read by the figure `key` names: SpeedRow columns under a computed name
        mine: list[Mapping[str, Any]] = [r for r in rates if r["method"] == method and r["task"] == task]
        tput, lat = (
            st.crossover(
                {r["request_rate"]: r[key] for r in mine},
                {r["request_rate"]: r[f"{key}_low"] for r in mine},
                unit="rate",
                suffix=" req/s",
            )
            for key in ("throughput_speedup", "latency_speedup")
        )
        on_latency, on_throughput = marks.crossover_marks(mine, "request_rate")  # as the concurrency crossover
        lat["text"] += on_latency
        tput["text"] += on_throughput
        rows.append(
            {
                "method": method,
                "label": mine[0]["label"],
                "baseline": mine[0]["baseline"],
                "task": task,
                "latency_kind": lat["kind"],
                "latency_crossover_rate": lat["concurrency"],
                "latency_text": lat["text"],
                "throughput_kind": tput["kind"],
                "throughput_crossover_rate": tput["concurrency"],
                "throughput_text": tput["text"],
            }
        )
    return rows


def _tpot_usable(row: SpeedRow) -> bool:
    return bool(row.get("tpot_p50_ms")) and not row.get("tpot_degenerate")


def _per_user(row: SpeedRow, basis: str) -> float | None:
    """Per-user tok/s on the task's basis: 1000 / TPOT p50, or tokens per answer / E2EL p50 (TTFT included)."""
    if basis == "TPOT":
        per_user: float = 1000 / row["tpot_p50_ms"]
        return per_user
    e2el, n = row.get("e2el_p50_ms"), row.get("tokens_per_request")
    return n * 1000 / e2el if e2el and n else None


def _basis(rows: list[SpeedRow]) -> str:
    """One basis per task, so every point of its frontier is comparable: TPOT when every cell has a usable one;
    else E2EL (answers read in a burst leave TPOT ~0; ITL is per streamed chunk for a speculative method, not
    per token, so it cannot stand in)."""
    return "TPOT" if all(_tpot_usable(r) for r in rows) else "E2EL"


def _load_order(row: SpeedRow) -> tuple[bool, float, float]:
    """Lighter load first: closed-loop cells by concurrency, then open-loop cells by offered rate."""
    return (row["load"] != "concurrency", row.get("concurrency") or 0, row.get("request_rate") or 0)


def _lowest_load(cells: list[SpeedRow]) -> dict[tuple[str, str], SpeedRow]:
    """Per method × task, its lowest-load cell with a TTFT: the reference its queueing is judged against."""
    out: dict[tuple[str, str], SpeedRow] = {}
    for r in sorted((r for r in cells if r.get("ttft_p50_ms")), key=_load_order):
        out.setdefault((r["method"], r["task"]), r)
    return out


def _queueing(row: SpeedRow, lowest: SpeedRow | None, same: list[SpeedRow]) -> str | None:
    ttft = row.get("ttft_p50_ms")
    if ttft is None or lowest is None:
        return None
    if row is lowest:  # nothing queues at the lowest load: far slower there than at a higher load is not queueing
        faster = min(
            (r for r in same if r is not row and r.get("ttft_p50_ms")), default=None, key=lambda r: r["ttft_p50_ms"]
        )
        if faster is not None and ttft > TTFT_QUEUE_FACTOR * faster["ttft_p50_ms"]:
            return (
                f"slow at the lowest load: TTFT p50 {ttft:.0f} ms > {TTFT_QUEUE_FACTOR:g}× the "
                f"{load_text(faster)} cell's {faster['ttft_p50_ms']:.0f} ms (nothing queues at "
                f"{load_text(row)}: a stall or a warm-up)"
            )
        return None
    base = lowest["ttft_p50_ms"]
    if ttft > TTFT_QUEUE_FACTOR * base:
        return f"queueing: TTFT p50 {ttft:.0f} ms > {TTFT_QUEUE_FACTOR:g}× the {load_text(lowest)} cell's {base:.0f} ms"
    return None


def _flags(row: SpeedRow, lowest: SpeedRow | None, same: list[SpeedRow]) -> list[str]:
    queueing = _queueing(row, lowest, same)
    flags = [queueing] if queueing else []
    served, e2el = row.get("request_throughput"), row.get("e2el_mean_ms")
    if served is None:
        return flags
    if row["load"] == "rate":
        if served < (1 - LITTLE_TOLERANCE) * row["request_rate"]:
            flags.append(
                f"fell behind: served {served:.2f} of {row['request_rate']:g} req/s offered (a queue grew, "
                "or the window is too short for the last answers' drain to vanish)"
            )
    elif e2el is not None and row.get("concurrency"):
        in_flight = served * e2el / 1000
        if abs(in_flight / row["concurrency"] - 1) > LITTLE_TOLERANCE:
            flags.append(
                f"Little's law: {in_flight:.2f} requests in flight on average, not {row['concurrency']} "
                "(ramp-up and drain dominate the window)"
            )
    return flags


def frontier_rows(speed: list[SpeedRow], rates: list[SpeedRow]) -> list[FrontierRow]:
    """One point per method × task × cell (closed and open loop), with its flags and, for a speculative method,
    the system throughput against the baseline's at equal per-user speed."""
    cells = speed + rates
    lowest = _lowest_load(cells)
    groups: dict[tuple[str, str], list[SpeedRow]] = {}  # a method's cells on a task, grouped once
    for c in cells:
        groups.setdefault((c["method"], c["task"]), []).append(c)
    basis = {t: _basis([r for r in cells if r["task"] == t]) for t in {r["task"] for r in cells}}
    rows: list[FrontierRow] = []
    for r in cells:
        per_user = _per_user(r, basis[r["task"]])
        served, e2el = r.get("request_throughput"), r.get("e2el_mean_ms")
        rows.append(
            {
                "method": r["method"],
                "label": r["label"],
                "baseline": r["baseline"],
                "task": r["task"],
                "role": r["role"],
                "load": r["load"],
                "offered": load_text(r),
                "concurrency": r["concurrency"],
                "request_rate": r["request_rate"],
                "repeats": r["repeats"],
                "system_tok_s": r["output_throughput"],
                "per_user_tok_s": per_user,
                "per_user_basis": basis[r["task"]],
                "ttft_p50_ms": r.get("ttft_p50_ms"),
                "served_req_s": served,
                "mean_in_flight": None if served is None or e2el is None else served * e2el / 1000,
                "flags": "; ".join(_flags(r, lowest.get((r["method"], r["task"])), groups[(r["method"], r["task"])]))
                or None,
                "on_frontier": None,  # these three: below, once every point is in
                "baseline_system_at_equal_per_user": None,
                "system_at_equal_per_user": None,
            }
        )

    def measured(method: str, task: str) -> list[FrontierRow]:
        return [
            p
            for p in rows
            if p["method"] == method
            and p["task"] == task
            and p["per_user_tok_s"] is not None
            and p["system_tok_s"] is not None
        ]

    for row in rows:
        front = pareto([(p["per_user_tok_s"], p["system_tok_s"]) for p in measured(row["method"], row["task"])])
        row["on_frontier"] = (row["per_user_tok_s"], row["system_tok_s"]) in front
        at = (
            _interpolate(measured(row["baseline"], row["task"]), row["per_user_tok_s"])
            if row["role"] == "spec"
            else None
        )
        row["baseline_system_at_equal_per_user"] = at
        row["system_at_equal_per_user"] = None if not at or row["system_tok_s"] is None else row["system_tok_s"] / at
    return sorted(rows, key=lambda r: (r["task"], r["method"], r["per_user_tok_s"] or 0))


def pareto(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The frontier of (per-user, system) points: those no other point beats on both, sorted by per-user speed.
    A lightly loaded cell (fast per user, little system throughput) under another that is faster on both is
    not on it."""
    front, best = [], float("-inf")
    for x, y in sorted(points, key=lambda p: (-p[0], -p[1])):
        if y > best:
            front.append((x, y))
            best = y
    return front[::-1]


def _interpolate(points: list[FrontierRow], per_user: float | None) -> float | None:
    """The baseline's system tok/s at `per_user` on its frontier (piecewise linear between its Pareto points);
    None outside the measured range."""
    if per_user is None:
        return None
    pts = pareto([(p["per_user_tok_s"], p["system_tok_s"]) for p in points])
    for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
        if x0 <= per_user <= x1:
            return y0 + (y1 - y0) * (per_user - x0) / (x1 - x0)
    return next((y for x, y in pts if x == per_user), None)


def capacity_rows(run: RunData) -> list[CapacityRow]:
    """--capacity: per method × task the highest rate meeting the SLO (a bracket), and its ratio to the
    baseline's with the interval both brackets allow."""
    found = {
        (md.name, task): (md, c)
        for md in run.methods.values()
        for task, c in md.record.load_figures.task_loads.items()
        if c.capacity
    }
    rows: list[CapacityRow] = []
    for (name, task), (md, entry) in sorted(found.items()):
        cap = entry.capacity or {}
        base = found.get((md.baseline or "", task))
        ratio = capacity.ratio(cap, base[1].capacity if base else None) if md.baseline else None
        rows.append(
            {
                "method": name,
                "label": md.display_name,
                "baseline": md.baseline,
                "task": task,
                "share": cap.get("share"),
                "slo": json.dumps(cap.get("slo")),
                "kind": cap["kind"],
                "capacity_req_s": cap.get("rate"),
                "fails_at_req_s": cap.get("bound"),
                "resolution": cap.get("resolution"),
                "probes": len(cap.get("probes") or []),
                "rates_from": entry.rates_from,
                "text": cap.get("text"),
                "capacity_speedup": (ratio or {}).get("point"),
                "capacity_speedup_low": (ratio or {}).get("low"),
                "capacity_speedup_high": (ratio or {}).get("high"),
            }
        )
    return rows
