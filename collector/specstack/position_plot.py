"""Acceptance by draft position, from Prometheus, as a PNG for the results bundle.

The same PromQL as the dashboards' "Acceptance by draft position" panel (the generator imports
`acceptance_by_position_expr` from here), evaluated over one window through Prometheus's HTTP API:

    sum by (position) (increase(vllm:spec_decode_num_accepted_tokens_per_pos_total{<labels>}[<window>]))
      / on () group_left ()
    (sum (increase(vllm:spec_decode_num_drafts_total{<labels>}[<window>])) > 0)

Both sums run over vLLM's `engine` label. Value at position p (0-based) = share of drafts (verification steps)
that accepted at least p+1 draft tokens. `increase()` extrapolates each series to the window edges by the same
factor (the series share scrape timestamps), so the ratio matches the counter deltas within one scrape's
rounding; a counter that was ~0 at the window start can be extrapolated less far than the others.
"""
from __future__ import annotations

import math
import time
from pathlib import Path

import requests

from . import metric_names as m

PER_POS_TOTAL = m.SPEC_ACCEPTED_PER_POS + "_total"
DRAFTS_TOTAL = m.SPEC_NUM_DRAFTS + "_total"


def _label_value(value: str) -> str:
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def selector(labels: dict) -> str:
    """Exact-match label selector body, e.g. `method="eagle3", run_id="r1"`."""
    return ", ".join(f'{k}="{_label_value(v)}"' for k, v in sorted(labels.items()))


def acceptance_by_position_expr(selector: str, window: str, by: str = "", fn: str = "increase") -> str:
    """Per-position accepted / drafts over `window`, grouped `by` (e.g. "method, run_id") and position.

    `fn` is "increase" (a window's value, e.g. `$__range`) or "rate" (a time series, e.g. `$__rate_interval`).
    """
    by_pos = f"{by}, {m.POSITION_LABEL}" if by else m.POSITION_LABEL
    num = f"sum by ({by_pos}) ({fn}({PER_POS_TOTAL}{{{selector}}}[{window}]))"
    den = f"sum{f' by ({by})' if by else ''} ({fn}({DRAFTS_TOTAL}{{{selector}}}[{window}]))"
    return f"{num} / on ({by}) group_left () ({den} > 0)"


def query_acceptance_by_position(prom_url: str, start: float, end: float, labels: dict,
                                 timeout: float = 30.0) -> list[float] | None:
    """Per-position acceptance over [start, end] (Unix seconds); None when there were no drafts/no data."""
    if end <= start:
        raise ValueError(f"empty window: start={start} end={end}")
    window = f"{max(1, round((end - start) * 1000))}ms"
    expr = acceptance_by_position_expr(selector(labels), window)
    resp = requests.get(f"{prom_url.rstrip('/')}/api/v1/query", params={"query": expr, "time": f"{end:.3f}"},
                        timeout=timeout)
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


def plot_acceptance_by_position(prom_url: str, start: float, end: float, labels: dict, out_png: Path,
                                title: str | None = None) -> list[float] | None:
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
            ax.set_xticks(positions, [str(p) for p in positions])   # vLLM's `position` label, as in Grafana
            ax.set_xlabel("draft position (0 = first draft token)")
            ax.set_ylabel("accepted / drafts")
            ax.set_ylim(0, 1.05)
        fig.text(0.99, 0.01,
                 f"window {end - start:.0f} s, from Prometheus ({m.SPEC_ACCEPTED_PER_POS}, {m.SPEC_NUM_DRAFTS})",
                 ha="right", va="bottom", fontsize=6, color="gray")
        fig.tight_layout(rect=(0, 0.03, 1, 1))
        fig.savefig(out_png)
    finally:
        plt.close(fig)
    return values


def largest_gap(timestamps: list[float], start: float, end: float) -> tuple[float, float]:
    """The longest stretch of [start, end] without a sample (edges included), as (from, to)."""
    points = [start, *sorted(t for t in timestamps if start <= t <= end), end]
    return max(zip(points, points[1:]), key=lambda pair: pair[1] - pair[0])


def sample_times(prom_url: str, start: float, end: float, labels: dict, timeout: float = 30.0) -> list[float]:
    """When Prometheus stored a sample of the drafts counter of this run in [start, end] (any engine)."""
    window = f"{max(1, math.ceil((end - start) * 1000))}ms"
    resp = requests.get(f"{prom_url.rstrip('/')}/api/v1/query", timeout=timeout,
                        params={"query": f"{DRAFTS_TOTAL}{{{selector(labels)}}}[{window}]", "time": f"{end:.3f}"})
    resp.raise_for_status()
    return sorted({float(t) for series in resp.json()["data"]["result"] for t, _ in series["values"]})


def bundle_view(prom_url: str, windows: list[dict], labels: dict, out_dir: Path, scrape_seconds: float) -> dict:
    """Prometheus's view of each acceptance window, as PNGs in the bundle; says so when that view is missing.

    A window shorter than two scrapes holds too few samples for increase(), so the range is widened to two
    scrape intervals before the window's end (it may then include the previous window's tail). A window in
    which Prometheus stored no sample for more than three scrape intervals (it was down or restarting) has
    no Prometheus view: increase() would bridge the hole with a guess."""
    view: dict = {"url": prom_url, "tasks": {}}
    for w in windows:
        if w["phase"] != "acceptance" or w.get("settled_at") is None:
            continue
        end = w["settled_at"] + scrape_seconds  # the first scrape after the window's last counter update
        start = min(w["start"], end - 2 * scrape_seconds)
        time.sleep(max(0.0, end + 0.5 - time.time()))  # let that scrape land
        try:
            hole = largest_gap(sample_times(prom_url, start, end, labels), start, end)
            if hole[1] - hole[0] > 3 * scrape_seconds:
                raise LookupError(f"Prometheus stored no sample for {hole[1] - hole[0]:.0f} s of this window "
                                  f"({_clock(hole[0])}-{_clock(hole[1])}; down or restarting?)")
            values = plot_acceptance_by_position(prom_url, start, end, labels,
                                                 Path(out_dir) / f"acceptance-by-position-{w['task']}.png",
                                                 title=f"{labels.get('method')} · {w['task']} (Prometheus)")
        except requests.ConnectionError:
            view["tasks"][w["task"]] = {"status": "missing", "reason": f"ConnectionError: Prometheus at {prom_url} "
                                                                       "did not answer"}
            continue
        except (requests.RequestException, RuntimeError, ValueError, LookupError) as e:
            view["tasks"][w["task"]] = {"status": "missing", "reason": f"{type(e).__name__}: {e}"}
            continue
        view["tasks"][w["task"]] = {"status": "ok", "per_position": values, "range": [start, end],
                                    "png": f"acceptance-by-position-{w['task']}.png"}
    return view


def _clock(t: float) -> str:
    return time.strftime("%H:%M:%S", time.gmtime(t)) + "Z"
