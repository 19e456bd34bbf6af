"""Dashboards as code: the committed JSON is what the code generates, and the check catches what it must.

Fast, no server: the PromQL itself is evaluated by tests/grafana/test_dashboard_queries.py against a real Prometheus.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
GRAFANA = REPO / "grafana"
sys.path.insert(0, str(GRAFANA))

import definitions  # noqa: E402
import generate  # noqa: E402
import panels as P  # noqa: E402

from specstack.config import metric_names as m  # noqa: E402

pytestmark = pytest.mark.unit


def load(name: str) -> dict:
    return json.loads((GRAFANA / "dashboards" / name).read_text(encoding="utf-8"))


@pytest.fixture
def grafana_copy(tmp_path: Path) -> Path:
    """A copy of the committed grafana/ outputs to tamper with."""
    root = tmp_path / "grafana"
    shutil.copytree(GRAFANA / "dashboards", root / "dashboards")
    shutil.copytree(GRAFANA / "provisioning", root / "provisioning")
    return root


def _write(root: Path, builders: dict) -> None:
    for rel, text in generate.outputs(builders).items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")


def _one_panel_dashboard(panel) -> dict:
    layout = P.Layout()
    layout.add(panel, 12, 8)
    return P.dashboard(uid="t", title="t", description="t", tags=["t"], layout=layout, variables=[], annotations=[])


# --- the check on the committed files -------------------------------------------------------------------


def test_check_passes_on_committed_files():
    assert generate.check(GRAFANA) == []


def test_check_cli_exit_code():
    """What `make dashboards-check` runs."""
    proc = subprocess.run(
        [sys.executable, str(GRAFANA / "generate.py"), "--check"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert "OK" in proc.stdout


def test_vllm_metric_names_come_from_the_installed_package():
    pkg = generate.vllm_package_dir()
    assert generate.vllm_version(pkg) == "0.32.0"
    defined = generate.vllm_defined_metrics(pkg)
    for name in (
        *m.SPEC_COUNTERS,
        *m.ENGINE_COUNTERS,
        m.KV_CACHE_USAGE,
        m.TIME_PER_OUTPUT_TOKEN,
        m.INTER_TOKEN_LATENCY,
        m.NUM_REQUESTS_RUNNING,
        m.NUM_REQUESTS_WAITING,
    ):
        assert name in defined, name
    assert "vllm:gpu_cache_usage_perc" not in defined  # the V0 name, gone in 0.32.0
    assert generate.is_defined("vllm:spec_decode_num_drafts_total", defined)
    assert generate.is_defined("vllm:inter_token_latency_seconds_bucket", defined)
    assert not generate.is_defined("vllm:spec_decode_num_drafts_bucket_total", defined)


# --- the check must fail ---------------------------------------------------------------------------------


def test_check_fails_on_tampered_json(grafana_copy: Path):
    path = grafana_copy / "dashboards" / "specstack-spec-decode.json"
    data = json.loads(path.read_text())
    data["panels"][0]["title"] = "edited in the UI"
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    errors = generate.check(grafana_copy)
    assert any("specstack-spec-decode.json differs" in e for e in errors), errors


def test_check_fails_on_whitespace_only_change(grafana_copy: Path):
    path = grafana_copy / "dashboards" / "specstack-comparison.json"
    path.write_text(path.read_text() + "\n")
    assert any("specstack-comparison.json differs" in e for e in generate.check(grafana_copy))


def test_check_fails_on_stale_provisioning(grafana_copy: Path):
    path = grafana_copy / generate.DATASOURCE_FILE
    path.write_text(path.read_text().replace("timeInterval: 5s", "timeInterval: 15s"))
    assert any(generate.DATASOURCE_FILE in e for e in generate.check(grafana_copy))


def test_check_fails_on_missing_and_unknown_dashboards(grafana_copy: Path):
    (grafana_copy / "dashboards" / "specstack-comparison.json").unlink()
    shutil.copy(GRAFANA / "dashboards" / "specstack-comparison.json", grafana_copy / "dashboards" / "extra.json")
    errors = generate.check(grafana_copy)
    assert any("specstack-comparison.json is missing" in e for e in errors), errors
    assert any("extra.json is not produced" in e for e in errors), errors


def test_check_fails_on_invented_vllm_metric(grafana_copy: Path):
    invented = "vllm:spec_decode_num_rejected_tokens_total"  # plausible, but vLLM 0.32.0 has no such metric
    panel = P.timeseries(
        "Rejected", f"Rejected tokens.\n\nMetrics: `{invented}`", [P.target(f"sum(rate({invented}[$__rate_interval]))")]
    )
    builders = {**definitions.DASHBOARDS, "invented.json": lambda: _one_panel_dashboard(panel)}
    _write(grafana_copy, builders)  # committed == generated, so only the metric check can fail
    errors = generate.check(grafana_copy, builders)
    assert errors and all("invented.json" in e for e in errors), errors
    assert any(f"names {invented}, which vLLM 0.32.0 does not define" in e for e in errors), errors
    # and on a hand-edited committed file querying it
    path = grafana_copy / "dashboards" / "specstack-spec-decode.json"
    path.write_text(path.read_text().replace("vllm:num_preemptions_total", "vllm:num_preemption_total"))
    errors = generate.check(grafana_copy, builders)
    assert any("specstack-spec-decode.json" in e and "vllm:num_preemption_total" in e for e in errors), errors


def test_check_fails_on_invented_window_metric(grafana_copy: Path):
    panel = P.timeseries("Windows", "Windows.\n\nMetrics: `specstack_window_open`", [P.target("specstack_window_open")])
    builders = {"w.json": lambda: _one_panel_dashboard(panel)}
    _write(grafana_copy, builders)
    (grafana_copy / "dashboards" / "specstack-spec-decode.json").unlink()
    (grafana_copy / "dashboards" / "specstack-comparison.json").unlink()
    errors = generate.check(grafana_copy, builders)
    assert any("specstack_window_open, which the window exporter does not export" in e for e in errors), errors


@pytest.mark.parametrize(
    "description,expected",
    [
        ("", "has no description"),
        ("Output tokens per second.", "description does not name vllm:generation_tokens"),
        ("Output tokens.\n\nMetrics: `vllm:prompt_tokens_total`", "description does not name vllm:generation_tokens"),
    ],
)
def test_check_fails_on_panel_without_description(grafana_copy: Path, description: str, expected: str):
    panel = P.timeseries(
        "Output tokens / s",
        description,
        [P.target('sum(rate(vllm:generation_tokens_total{method=~"$method"}[$__rate_interval]))')],
    )
    builders = {**definitions.DASHBOARDS, "nodesc.json": lambda: _one_panel_dashboard(panel)}
    _write(grafana_copy, builders)
    errors = generate.check(grafana_copy, builders)
    assert errors and any("nodesc.json" in e and expected in e for e in errors), errors


def test_generate_refuses_to_write_a_dashboard_the_check_rejects(tmp_path: Path, monkeypatch):
    panel = P.timeseries("x", "", [P.target("vllm:not_a_metric")])
    monkeypatch.setattr(definitions, "DASHBOARDS", {"bad.json": lambda: _one_panel_dashboard(panel)})
    assert generate.main(["--root", str(tmp_path)]) == 1
    assert not (tmp_path / "dashboards").exists()


# --- what the dashboards contain ------------------------------------------------------------------------


def test_every_panel_has_a_description_naming_its_metrics():
    for name in definitions.DASHBOARDS:
        data = load(name)
        for panel in generate.iter_panels(data):
            if panel["type"] == "row":
                continue
            assert panel["description"].strip(), panel["title"]
            assert "Metrics: `" in panel["description"], panel["title"]


def test_spec_dashboard_has_the_required_panels():
    data = load("specstack-spec-decode.json")
    by_title = {}
    for p in generate.iter_panels(data):
        by_title.setdefault(p["title"], []).append(p)
    for title in [
        "Draft acceptance rate",
        "Mean acceptance length",
        "Acceptance by draft position (range)",
        "Acceptance by draft position over time",
        "Draft tokens / s: proposed, accepted, rejected",
        "Share of output tokens from drafts",
        "Output tokens / s",
        "TPOT (time per output token), server histogram",
        "ITL per engine step, server histogram",
        "KV-cache usage",
        "Preemptions / s",
        "Running and waiting requests",
        "Run windows (exact times)",
    ]:
        assert title in by_title, title
    assert {p["type"] for p in by_title["Acceptance by draft position (range)"]} == {"barchart"}
    assert by_title["Acceptance by draft position (range)"][0]["options"]["xField"] == "position"
    for title in ["Draft acceptance rate (range)", "Mean acceptance length (range)", "Drafts (range)"]:
        assert by_title[title][0]["type"] == "stat"
    itl = by_title["ITL per engine step, server histogram"][0]["description"]
    assert "per ENGINE STEP, not per token" in itl
    legends = {t["legendFormat"] for t in by_title["Draft tokens / s: proposed, accepted, rejected"][0]["targets"]}
    assert legends == {"proposed", "accepted", "rejected"}
    assert {v["name"] for v in data["templating"]["list"]} == {"method", "run_id"}


def test_spec_ratios_are_guarded_and_show_no_drafts():
    for name in definitions.DASHBOARDS:
        for panel in generate.iter_panels(load(name)):
            for target in panel.get("targets") or []:
                expr = target["expr"]
                if " / " in expr and "label_values" not in expr:
                    # every division drops zero denominators
                    assert expr.count(" / ") == len(re.findall(r"/ (?:on \([^)]*\) group_left \(\) )?\(", expr)), expr
                    assert "> 0)" in expr, expr
                if "histogram_quantile" in expr:
                    assert "_count" in expr and ") > 0)" in expr, expr
            if (
                any(m.SPEC_PREFIX in t["expr"] for t in panel.get("targets") or [])
                and "vllm:generation_tokens_total" not in panel["description"].split("Metrics:")[0]
            ):
                assert panel["fieldConfig"]["defaults"].get("noValue") == P.NO_DRAFTS, (name, panel["title"])


def test_queries_sum_over_engine():
    for name in definitions.DASHBOARDS:
        for where, expr in generate.queries(load(name)):
            if "vllm:" in expr and not expr.startswith("label_values"):
                assert "engine" not in expr, (where, expr)
                assert re.match(r"^(1 \+ )?(histogram_quantile\([0-9.]+, )?(sum|max) by \(", expr), (where, expr)


def test_comparison_overlays_methods_and_is_annotated():
    data = load("specstack-comparison.json")
    variables = {v["name"]: v for v in data["templating"]["list"]}
    assert variables["method"]["multi"] and variables["method"]["includeAll"]
    for panel in generate.iter_panels(data):
        if panel["type"] == "timeseries":
            assert all(t["legendFormat"].startswith("{{method}}") for t in panel["targets"]), panel["title"]
    annotations = data["annotations"]["list"]
    assert [a["name"] for a in annotations] == ["Warm-up windows", "Acceptance windows", "Bench windows"]
    for a in annotations:
        # the max over each step: a window seen by one scrape between two steps still draws (test_dashboard_queries)
        assert a["target"]["expr"].startswith("max_over_time(specstack_window_active{")
        assert a["target"]["expr"].endswith("}[$__interval]) > 0")
        assert a["target"]["interval"] == definitions.SCRAPE_INTERVAL
    assert load("specstack-spec-decode.json")["annotations"] == data["annotations"]


def test_panel_titles_are_unique():
    for name in definitions.DASHBOARDS:
        titles = [p["title"] for p in generate.iter_panels(load(name))]
        assert len(titles) == len(set(titles)), name


def test_panels_do_not_overlap_and_fit_the_grid():
    for name in definitions.DASHBOARDS:
        cells = set()
        for panel in load(name)["panels"]:
            g = panel["gridPos"]
            assert g["x"] >= 0 and g["x"] + g["w"] <= 24, (name, panel["title"])
            for x in range(g["x"], g["x"] + g["w"]):
                for y in range(g["y"], g["y"] + g["h"]):
                    assert (x, y) not in cells, (name, panel["title"])
                    cells.add((x, y))


# --- provisioning ---------------------------------------------------------------------------------------


def _prometheus_vllm_scrape_interval() -> str:
    """The scrape interval Prometheus uses for vLLM, from prometheus/prometheus.yml once it exists."""
    path = REPO / "prometheus" / "prometheus.yml"
    if not path.exists():  # not written yet: the generator's constant stands in (see the report to the lead)
        return definitions.SCRAPE_INTERVAL
    config = yaml.safe_load(path.read_text())
    default = (config.get("global") or {}).get("scrape_interval", "1m")
    intervals = {
        job.get("scrape_interval", default)
        for job in config.get("scrape_configs") or []
        if job.get("job_name") not in ("prometheus", "specstack")
    }
    assert len(intervals) == 1, f"vLLM jobs in {path} use several scrape intervals: {intervals}"
    return intervals.pop()


def test_datasource_provisioning():
    doc = yaml.safe_load((GRAFANA / generate.DATASOURCE_FILE).read_text())
    assert doc["apiVersion"] == 1
    (ds,) = doc["datasources"]
    assert ds["type"] == "prometheus" and ds["url"] == "http://prometheus:9090" and ds["access"] == "proxy"
    assert ds["uid"] == P.DATASOURCE_UID
    assert ds["jsonData"]["timeInterval"] == definitions.SCRAPE_INTERVAL == "5s"
    assert ds["jsonData"]["timeInterval"] == _prometheus_vllm_scrape_interval()
    # every query of every dashboard goes to this datasource
    for name in definitions.DASHBOARDS:
        data = load(name)
        refs = [p["datasource"] for p in generate.iter_panels(data) if p["type"] != "row"]
        refs += [t["datasource"] for p in generate.iter_panels(data) for t in p.get("targets") or []]
        refs += [v["datasource"] for v in data["templating"]["list"]]
        refs += [a["datasource"] for a in data["annotations"]["list"]]
        assert all(r == {"type": "prometheus", "uid": P.DATASOURCE_UID} for r in refs), name


def test_dashboard_provider_provisioning():
    doc = yaml.safe_load((GRAFANA / generate.PROVIDER_FILE).read_text())
    assert doc["apiVersion"] == 1
    (provider,) = doc["providers"]
    assert provider["type"] == "file"
    assert provider["options"]["path"] == "/var/lib/grafana/dashboards"
    assert provider["allowUiUpdates"] is False
    uids = [load(name)["uid"] for name in definitions.DASHBOARDS]
    assert len(set(uids)) == len(uids) and all(uids)
