"""Prometheus's view of a method's acceptance windows: acceptance by draft position, as PNGs for the bundle.

The same PromQL as the dashboards' "Acceptance by draft position" panel (config/promql.py), evaluated over one
window through Prometheus's HTTP API. The collector's direct /metrics diff is the run's verdict; this view is a
second opinion, checked after the method's measurements are published (runs/monitoring.py). `increase()` extrapolates each series to the window edges by the same
factor (the series share scrape timestamps), so the ratio matches the counter deltas within one scrape's
rounding; a counter that was ~0 at the window start can be extrapolated less far than the others.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import requests

from specstack.config import metric_names as m
from specstack.config.promql import DRAFTS_TOTAL, acceptance_by_position_expr, selector


def query_acceptance_by_position(
    prom_url: str, start: float, end: float, labels: dict[str, Any], timeout: float = 30.0
) -> list[float] | None:
    """Per-position acceptance over [start, end] (Unix seconds); None when there were no drafts/no data."""
    if end <= start:
        raise ValueError(f"empty window: start={start} end={end}")
    window = f"{max(1, round((end - start) * 1000))}ms"
    expr = acceptance_by_position_expr(selector(labels), window)
    resp = requests.get(
        f"{prom_url.rstrip('/')}/api/v1/query", params={"query": expr, "time": f"{end:.3f}"}, timeout=timeout
    )
    resp.raise_for_status()
    body = resp.json()
    if body.get("status") != "success":
        raise RuntimeError(f"Prometheus query failed: {body.get('error')} ({expr})")
    values: dict[int, float] = {}
    for series in body["data"]["result"]:
        value = float(series["value"][1])
        if math.isfinite(value):
            values[int(series["metric"][m.POSITION_LABEL])] = value
    if not values:
        return None
    # vLLM pre-creates positions 0..K-1, so a gap means the series were not all scraped.
    return [values.get(p, float("nan")) for p in range(max(values) + 1)]


def plot_acceptance_by_position(
    prom_url: str, start: float, end: float, labels: dict[str, Any], out_png: Path, title: str | None = None
) -> list[float] | None:
    """Query the per-position acceptance over [start, end] and write a bar chart PNG to `out_png`.

    Returns the plotted values (index = 0-based draft position), or None when there were no drafts in the
    window; then the PNG says "no drafts" instead of showing bars.
    """
    values = query_acceptance_by_position(prom_url, start, end, labels)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_png = Path(out_png)
    out_png.parent.mkdir(parents=True, exist_ok=True)
    name = ", ".join(f"{k}={v}" for k, v in sorted(labels.items()))
    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=100)
    try:
        ax.set_title(title or f"Acceptance by draft position ({name})", fontsize=10)
        if values is None:
            ax.text(0.5, 0.5, "no drafts", ha="center", va="center", fontsize=20, transform=ax.transAxes)
            ax.set_xticks([])
            ax.set_yticks([])
        else:
            positions = list(range(len(values)))
            bars = ax.bar(positions, values, color="#3274d9")
            ax.bar_label(bars, labels=[f"{v:.3f}" for v in values], fontsize=8)
            ax.set_xticks(positions, [str(p) for p in positions])  # vLLM's `position` label, as in Grafana
            ax.set_xlabel("draft position (0 = first draft token)")
            ax.set_ylabel("accepted / drafts")
            ax.set_ylim(0, 1.05)
        fig.text(
            0.99,
            0.01,
            f"window {end - start:.0f} s, from Prometheus ({m.SPEC_ACCEPTED_PER_POS}, {m.SPEC_NUM_DRAFTS})",
            ha="right",
            va="bottom",
            fontsize=6,
            color="gray",
        )
        fig.tight_layout(rect=(0, 0.03, 1, 1))
        fig.savefig(out_png)
    finally:
        plt.close(fig)
    return values


def largest_gap(timestamps: list[float], start: float, end: float) -> tuple[float, float]:
    """The longest stretch of [start, end] without a sample (edges included), as (from, to)."""
    points = [start, *sorted(t for t in timestamps if start <= t <= end), end]
    return max(zip(points, points[1:]), key=lambda pair: pair[1] - pair[0])


def sample_times(prom_url: str, start: float, end: float, labels: dict[str, Any], timeout: float = 30.0) -> list[float]:
    """When Prometheus stored a sample of the drafts counter of this run in [start, end] (any engine)."""
    window = f"{max(1, math.ceil((end - start) * 1000))}ms"
    resp = requests.get(
        f"{prom_url.rstrip('/')}/api/v1/query",
        timeout=timeout,
        params={"query": f"{DRAFTS_TOTAL}{{{selector(labels)}}}[{window}]", "time": f"{end:.3f}"},
    )
    resp.raise_for_status()
    return sorted({float(t) for series in resp.json()["data"]["result"] for t, _ in series["values"]})


def _last_sample_before(prom_url: str, window: dict[str, Any], labels: dict[str, Any], scrape_seconds: float) -> float:
    """When Prometheus last sampled this server before the window opened. increase() is exact only over series
    Prometheus was already scraping then (the run waits, bounded, for the first scrape after the server is
    ready: Monitoring.await_first_sample; if it never came, the first window opened before it); and a range
    starting at that sample holds the window's whole change even when the window was shorter than a scrape
    interval."""
    before = sample_times(prom_url, window["start"] - 3 * scrape_seconds, window["start"], labels)
    if not before:
        raise LookupError(
            "Prometheus had no sample of this server when the window opened (its first scrape "
            "after the server was ready came later)"
        )
    return before[-1]


def view_of_window(
    prom_url: str, w: dict[str, Any], labels: dict[str, Any], out_dir: Path, scrape_seconds: float
) -> dict[str, Any]:
    """One acceptance window's view: a PNG and its values, or why it is missing."""
    end = w["settled_at"] + scrape_seconds  # the first scrape after the window's last counter update
    time.sleep(max(0.0, end + 0.5 - time.time()))  # let that scrape land
    try:
        start = min(w["start"], end - 2 * scrape_seconds)
        hole = largest_gap(sample_times(prom_url, start, end, labels), start, end)
        if hole[1] - hole[0] > 3 * scrape_seconds:
            raise LookupError(
                f"Prometheus stored no sample for {hole[1] - hole[0]:.0f} s of this window "
                f"({_clock(hole[0])}-{_clock(hole[1])}; down or restarting?)"
            )
        start = min(start, _last_sample_before(prom_url, w, labels, scrape_seconds))
        values = plot_acceptance_by_position(
            prom_url,
            start,
            end,
            labels,
            Path(out_dir) / f"acceptance-by-position-{w['task']}.png",
            title=f"{labels.get('method')} · {w['task']} (Prometheus)",
        )
    except requests.ConnectionError:
        return {"status": "missing", "reason": f"ConnectionError: Prometheus at {prom_url} did not answer"}
    except (requests.RequestException, RuntimeError, ValueError, LookupError) as e:
        return {"status": "missing", "reason": f"{type(e).__name__}: {e}"}
    return {
        "status": "ok",
        "per_position": values,
        "range": [start, end],
        "png": f"acceptance-by-position-{w['task']}.png",
    }


def bundle_view(
    prom_url: str, windows: list[dict[str, Any]], labels: dict[str, Any], out_dir: Path, scrape_seconds: float
) -> dict[str, Any]:
    """Prometheus's view of each acceptance window, as PNGs in the bundle; says so when that view is missing.

    The range starts at Prometheus's last sample before the window (or two scrape intervals before its end, if
    that is earlier: a short window holds too few samples for increase(); the range may then include the
    previous window's tail) and ends at the first scrape after it. A window in
    which Prometheus stored no sample for more than three scrape intervals (it was down or restarting) has
    no Prometheus view: increase() would bridge the hole with a guess."""
    view: dict[str, Any] = {"url": prom_url, "tasks": {}}
    for w in windows:
        if w["phase"] == "acceptance" and w.get("settled_at") is not None:
            view["tasks"][w["task"]] = view_of_window(prom_url, w, labels, out_dir, scrape_seconds)
    return view


def _clock(t: float) -> str:
    return time.strftime("%H:%M:%S", time.gmtime(t)) + "Z"
