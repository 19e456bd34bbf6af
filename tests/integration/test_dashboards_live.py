"""Both Grafana dashboards' queries evaluated by a real Prometheus on the real sweep's data.

Every panel, variable and annotation query returns data for a spec method over its run; spec panels are
empty ("No drafts") for plain decode; the per-position panel over an acceptance window equals the
collector's per-position rates within one scrape's rounding; the bundle holds that panel as a PNG."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import requests

from specstack import metric_names as m
from specstack.position_plot import query_acceptance_by_position

from .conftest import REPO
from .prom import SCRAPE_SECONDS

sys.path.insert(0, str(REPO / "grafana"))
import generate  # noqa: E402  (grafana/generate.py: the dashboards' own query walker and renderer)

DASHBOARDS = sorted((REPO / "grafana" / "dashboards").glob("*.json"))
SPEC_FAMILIES = (m.SPEC_PREFIX,)


def run_range(summary: dict) -> tuple[float, float]:
    return summary["windows"][0]["start"] - 2, summary["windows"][-1]["settled_at"] + 2 * SCRAPE_SECONDS


def evaluate(prometheus, expr: str, start: float, end: float) -> list[dict]:
    r = requests.get(f"{prometheus.url}/api/v1/query_range",
                     params={"query": expr, "start": start, "end": end, "step": "1s"}, timeout=30)
    body = r.json()
    assert body.get("status") == "success", f"{expr}: {body.get('error')}"
    return body["data"]["result"]


def _spec_only(expr: str) -> bool:
    return any(f in expr for f in SPEC_FAMILIES)


@pytest.mark.parametrize("dashboard", DASHBOARDS, ids=lambda p: p.stem)
@pytest.mark.parametrize("method", ["eagle3", "baseline"])
def test_every_query_answers_on_real_data(sweep_run, prometheus, dashboard, method):
    summary = sweep_run["summaries"][method]
    start, end = run_range(summary)
    variables = {"method": method, "run_id": "it-sweep"}
    answered, empty = [], []
    for where, expr in generate.queries(json.loads(dashboard.read_text())):
        rendered = generate.render(expr, variables=variables, rate_interval=f"{int(4 * SCRAPE_SECONDS)}s",
                                   range_=f"{int(end - start)}s", interval=f"{int(SCRAPE_SECONDS)}s")
        result = evaluate(prometheus, rendered, start, end)
        (answered if result else empty).append((where, _spec_only(expr)))
    if method == "baseline":
        # plain decode: exactly the spec panels are empty, everything else answers
        assert all(spec for _, spec in empty), [w for w, spec in empty if not spec]
        assert any(spec for _, spec in empty)
        assert all(not spec for _, spec in answered), [w for w, spec in answered if spec]
    else:
        assert empty == [], f"queries with no data for {method}: {empty}"
    assert answered


@pytest.mark.parametrize("method", ["ngram", "draft_model", "eagle3", "suffix", "mtp"])
def test_per_position_panel_matches_the_collector(sweep_run, prometheus, method):
    summary = sweep_run["summaries"][method]
    for w in (w for w in summary["windows"] if w["phase"] == "acceptance"):
        # the quiet gaps around the window hold no traffic, so widening the range to them changes nothing
        start, end = w["start"] - SCRAPE_SECONDS, w["settled_at"] + SCRAPE_SECONDS
        prom = query_acceptance_by_position(prometheus.url, start, end,
                                            {"method": method, "run_id": "it-sweep"})
        mine = w["from_counters"]["per_position_rates"]
        assert prom is not None and len(prom) == len(mine), (w["name"], prom, mine)
        # increase() extrapolates every series of a window by the same factor (same scrape timestamps), so
        # the ratio is exact up to one scrape's worth of extrapolation at a counter near zero
        steps = w["from_counters"]["steps"]
        for p, (a, b) in enumerate(zip(prom, mine)):
            assert abs(a - b) <= max(1 / steps, 0.02), (w["name"], p, a, b)


@pytest.mark.parametrize("method", ["eagle3", "mtp"])
def test_bundle_keeps_the_per_position_png(sweep_run, method):
    summary = sweep_run["summaries"][method]
    view = summary["prometheus_view"]
    for task in ("code", "chat"):
        entry = view["tasks"][task]
        assert entry["status"] == "ok", entry
        png = Path(sweep_run["run_dir"]) / method / "plots" / entry["png"]
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
        assert len(entry["per_position"]) == summary["speculative_config"]["num_speculative_tokens"]
