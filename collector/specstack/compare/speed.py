"""Bench figures of A and B side by side, per method × task × concurrency cell present in both runs.

Each figure is the median over a side's repeats (the bench percentile of each repeat, as in the report);
B against A is the ratio B/A with a percentile-bootstrap 95 % interval over repeats (figures/stats.py
bootstrap_ratio, fixed seed) when both sides have at least MIN_REPEATS. Verdict: "within noise" when the
interval includes 1.0×, "changed (better|worse)" when it excludes it, "point only" without an interval.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from specstack.compare.pairing import SPEED, Pair
from specstack.compare.rows import SpeedRow
from specstack.figures import stats as st
from specstack.figures.host_load import cell_cpu
from specstack.report.cells import bench_cells
from specstack.report.rows import BenchCellRow
from specstack.results.reader import MethodData

# figure -> (bench cell key, higher is better)
FIGURES = {
    "throughput": ("output_throughput", True),
    **{f"{m}_p{p}": (f"p{p}_{m}_ms", False) for m in ("tpot", "itl") for p in (50, 95, 99)},
    "e2el_p50": ("p50_e2el_ms", False),  # the latency the report falls back on where TPOT is degenerate
    "bench_acceptance_length": ("spec_decode_acceptance_length", True),
}


def by_concurrency(md: MethodData, task: str) -> dict[int, list[BenchCellRow]]:
    out: dict[int, list[BenchCellRow]] = {}
    for cell in bench_cells(md, task):
        if cell["status"] == "ok" and cell["load"] == "concurrency":  # open-loop cells: compare/capacity.py
            out.setdefault(cell["concurrency"], []).append(cell)
    return out


def _values(cells: Sequence[Mapping[str, Any]], key: str) -> list[Any]:
    """The cells' values of one bench figure (FIGURES names it), where they have one."""
    return [x[key] for x in cells if x.get(key) is not None]


def verdict(iv: st.Interval, higher_is_better: bool) -> str:
    if iv.point is None:
        return "n/a"
    if not iv.has_interval:
        return f"point only ({min(iv.n_num, iv.n_den)} repeats; an interval needs ≥ {st.MIN_REPEATS} a side)"
    if iv.crosses_one:
        return "within noise"
    assert iv.low is not None  # has_interval
    better = (iv.low > 1.0) == higher_is_better
    return f"changed ({'better' if better else 'worse'})"


def _tail_note(figure: str, cells_a: list[BenchCellRow], cells_b: list[BenchCellRow]) -> str | None:
    """A p95/p99 with fewer than MIN_TAIL requests beyond it in a repeat (the report's † rule, by requests)."""
    if not figure.endswith(("_p95", "_p99")):
        return None
    p = int(figure[-2:])
    n = min((c.get("completed") or 0 for c in cells_a + cells_b), default=0)
    return f"p{p} from {n} requests per repeat (needs ≥ {st.min_samples(p)})" if st.unstable(p, n) else None


def speed_rows(pairs: list[Pair]) -> tuple[list[SpeedRow], list[str]]:
    """One row per pair × concurrency in both × figure; and the cells only one side has."""
    rows: list[SpeedRow] = []
    notes: list[str] = []
    for pair in pairs:
        ca, cb = by_concurrency(pair.a, pair.task), by_concurrency(pair.b, pair.task)
        notes += [
            f"{pair.method} {pair.task} c={c}: bench cell only in {'A' if c in ca else 'B'}"
            for c in sorted(set(ca) ^ set(cb))
        ]
        blocked = pair.not_comparable(SPEED)
        for c in sorted(set(ca) & set(cb)):
            degenerate = any(x.get("tpot_degenerate") for x in ca[c] + cb[c])
            cpus = [cell_cpu(md.record.window_list, cells) for md, cells in ((pair.a, ca[c]), (pair.b, cb[c]))]
            others, clients = [x.other_share for x in cpus], [x.bench_share for x in cpus]
            busy, bound = st.host_busy(*others), st.client_bound(*clients)
            for figure, (key, higher) in FIGURES.items():
                va, vb = _values(ca[c], key), _values(cb[c], key)
                if not va and not vb:
                    continue  # e.g. bench acceptance length of plain decode
                iv = st.bootstrap_ratio(vb, va)
                note = [n for n in (_tail_note(figure, ca[c], cb[c]),) if n]
                if degenerate and figure.startswith("tpot"):
                    note.append("TPOT degenerate (answers arrived in a burst): read e2el_p50")
                if busy:  # other work shared the cores: the verdict is marked, not dropped (as in the report)
                    note.append(
                        "busy host (other processes "
                        + "/".join("n/a" if x is None else f"{x:.0%}" for x in others)
                        + f" of the core-seconds A/B > {st.MAX_OTHER_CPU_SHARE:.0%})"
                    )
                if bound:  # the client, not the server, set the pace
                    note.append(
                        "client-bound (bench client "
                        + "/".join("n/a" if x is None else f"{x:.0%}" for x in clients)
                        + f" of a core A/B > {st.CLIENT_SATURATED:.0%})"
                    )
                rows.append(
                    {
                        "method": pair.method,
                        "label": pair.label,
                        "task": pair.task,
                        "concurrency": c,
                        "figure": figure,
                        "higher_is_better": higher,
                        "a": st.median(va),
                        "b": st.median(vb),
                        "repeats_a": len(va),
                        "repeats_b": len(vb),
                        "ratio": iv.point,
                        "ratio_low": iv.low,
                        "ratio_high": iv.high,
                        "relative": None if iv.point is None else iv.point - 1,
                        "verdict": blocked or verdict(iv, higher),
                        "comparable": blocked is None,
                        "design_a": pair.a.replication.design,
                        "design_b": pair.b.replication.design,
                        "note": "; ".join(note) or None,
                    }
                )
    return rows, notes
