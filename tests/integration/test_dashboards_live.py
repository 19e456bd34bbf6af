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

from specstack.config import metric_names as m
from specstack.measure.prometheus_view import query_acceptance_by_position
from tests.support import REPO, SCRAPE_SECONDS

sys.path.insert(0, str(REPO / "grafana"))
import generate  # noqa: E402  (grafana/generate.py: the dashboards' own query walker and renderer)

pytestmark = pytest.mark.integration

DASHBOARDS = sorted((REPO / "grafana" / "dashboards").glob("*.json"))
SPEC_FAMILIES = (m.SPEC_PREFIX,)


def run_range(summary: dict) -> tuple[float, float]:
    return summary["windows"][0]["start"] - 2, summary["windows"][-1]["settled_at"] + 2 * SCRAPE_SECONDS


def evaluate(prometheus, expr: str, start: float, end: float) -> list[dict]:
    r = requests.get(
        f"{prometheus.url}/api/v1/query_range",
        params={"query": expr, "start": start, "end": end, "step": "1s"},
        timeout=30,
    )
    body = r.json()
    assert body.get("status") == "success", f"{expr}: {body.get('error')}"
    return body["data"]["result"]


def _spec_only(expr: str) -> bool:
    return any(f in expr for f in SPEC_FAMILIES)


def _annotation_may_be_empty(where: str, summary: dict) -> bool:
    """A window shorter than two scrapes may fall between samples of the `active` gauge; its annotation
    then has nothing to show (the bundle's windows table keeps its exact times)."""
    if not where.startswith("annotation"):
        return False
    phase = next((p for p in ("warm", "acceptance", "bench") if p in where.lower()), None)
    lengths = [w["end"] - w["start"] for w in summary["windows"] if phase and w["phase"].startswith(phase)]
    return bool(lengths) and max(lengths) < 2 * SCRAPE_SECONDS


@pytest.mark.parametrize("dashboard", DASHBOARDS, ids=lambda p: p.stem)
@pytest.mark.parametrize("method", ["eagle3", "baseline"])
def test_every_query_answers_on_real_data(sweep_run, prometheus, dashboard, method):
    summary = sweep_run["summaries"][method]
    start, end = run_range(summary)
    variables = {"method": method, "run_id": "it-sweep"}
    answered, empty = [], []
    for where, expr in generate.queries(json.loads(dashboard.read_text())):
        rendered = generate.render(
            expr,
            variables=variables,
            rate_interval=f"{int(4 * SCRAPE_SECONDS)}s",
            range_=f"{int(end - start)}s",
            interval=f"{int(SCRAPE_SECONDS)}s",
        )
        result = evaluate(prometheus, rendered, start, end)
        if not result and _annotation_may_be_empty(where, summary):
            continue
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
    """The panel's query over a window aligned to Prometheus's own scrapes (the last sample before the window,
    the first after it; quiet gaps guarantee both hold the snapshot values) equals the collector's rates.
    1 ms before the first sample keeps increase()'s extrapolation to 1 ms, i.e. far below one scrape."""
    summary = sweep_run["summaries"][method]
    labels = {"method": method, "run_id": "it-sweep"}
    for w in (w for w in summary["windows"] if w["phase"] == "acceptance"):
        samples = prometheus.samples(
            f'{m.SPEC_NUM_DRAFTS}_total{{method="{method}",run_id="it-sweep"}}', w["start"] - 10, w["settled_at"] + 10
        )
        t0 = max(t for t, _ in samples if t <= w["start"])
        t1 = min(t for t, _ in samples if t >= w["settled_at"])
        prom = query_acceptance_by_position(prometheus.url, t0 - 0.001, t1, labels)
        mine = w["from_counters"]["per_position_rates"]
        assert prom is not None and len(prom) == len(mine), (w["name"], prom, mine)
        for p, (a, b) in enumerate(zip(prom, mine)):
            assert a == pytest.approx(b, rel=1e-3, abs=1e-9), (w["name"], p, prom, mine)


@pytest.mark.parametrize("method", ["eagle3", "mtp"])
def test_bundle_keeps_the_per_position_png(sweep_run, method):
    summary = sweep_run["summaries"][method]
    view = summary["prometheus_view"]
    # checked after the method was published, beside the next server's start: written into the bundle too
    on_disk = json.loads((Path(sweep_run["run_dir"]) / method / "summary.json").read_text())
    assert view["status"] == "checked" and on_disk["prometheus_view"] == view
    for task in ("code", "chat"):
        entry = view["tasks"][task]
        assert entry["status"] == "ok", entry
        png = Path(sweep_run["run_dir"]) / method / "plots" / entry["png"]
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
        assert len(entry["per_position"]) == summary["speculative_config"]["num_speculative_tokens"]
