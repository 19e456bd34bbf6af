"""Every PromQL expression of both dashboards, evaluated by a real Prometheus (the Debian `prometheus` binary).

No vLLM is needed: a synthetic 30-minute history with vLLM 0.32.0's metric names and the stack's labels
(a baseline run, then an eagle3 run on two engines that goes idle, and the collector's run windows) is backfilled
with `promtool tsdb create-blocks-from openmetrics`, and a live WindowExporter is scraped. The tests check that
every expression evaluates without error, never yields NaN/Inf, gives the expected numbers, shows "no data"
(-> "No drafts") where it must, and that the annotations and the position PNG match the windows.
The binaries come from `apt-get install prometheus`; without them these tests fail, they never skip.
"""

from __future__ import annotations

import math
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "grafana"))

import definitions  # noqa: E402
import generate  # noqa: E402

from specstack.config import metric_names as m  # noqa: E402
from specstack.measure.exporter import WindowExporter  # noqa: E402
from specstack.measure.prometheus_view import plot_acceptance_by_position  # noqa: E402
from tests.support import Prometheus, binary  # noqa: E402

pytestmark = pytest.mark.config

STEP = 5  # scrape interval of the synthetic history, = definitions.SCRAPE_INTERVAL
RATE_INTERVAL = "20s"  # Grafana's $__rate_interval for a 5 s timeInterval: max(4 x 5 s, step + 5 s)
DURATION = 1800
BUCKETS = ("0.01", "0.025", "0.05", "0.1", "+Inf")

# Per scrape (5 s) and engine: drafts, draft tokens, accepted per position (K = 3) of the eagle3 run.
ENGINES = {"0": (10, 30, (8, 5, 2)), "1": (20, 60, (12, 6, 3))}
DRAFTS = sum(e[0] for e in ENGINES.values())  # 30
DRAFT_TOKENS = sum(e[1] for e in ENGINES.values())  # 90
PER_POS = [sum(e[2][p] for e in ENGINES.values()) for p in range(3)]  # [20, 11, 5]
ACCEPTED = sum(PER_POS)  # 36
GENERATED = DRAFTS + ACCEPTED  # one bonus token per step: 66
EXPECTED_POS = [x / DRAFTS for x in PER_POS]

# (method, phase, task, concurrency, start, end), seconds after T0; fractional = exact collector times.
WINDOWS = [
    ("baseline", "acceptance", "chat", "", 100.2, 300.7),
    ("baseline", "bench", "chat", "4", 310.1, 590.4),
    ("eagle3", "warmup", "", "", 700.3, 740.9),
    ("eagle3", "acceptance", "chat", "", 760.3, 1000.7),
    ("eagle3", "bench", "chat", "4", 1010.2, 1400.6),
]
# A window one scrape saw open, the next scrape 10 ms early (CPU-busy hosts scrape so: test_dashboards_live saw
# it): a query step just before each of the two samples finds the 0 before it and the 0 after it.
JITTER_TS = (1600, 1605, 1610, 1614.99, 1620)
JITTER_OPEN = 1610
BASELINE = (0, 600)  # series present (traffic all along)
EAGLE = (700, 1800)  # series present; traffic until 1500, idle after
EAGLE_BUSY_UNTIL = 1500


def _fmt_labels(labels: dict) -> str:
    return "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}"


def synthetic_openmetrics(t0: int) -> str:
    lines: list[str] = []
    common = {"job": "vllm", "instance": "vllm:8000", "model_name": "m", "run_id": "r1"}

    def counter(name: str, series: list[tuple[dict, range, callable]]):
        lines.append(f"# TYPE {name} counter")
        for labels, ts, value in series:
            for t in ts:
                lines.append(f"{name}_total{_fmt_labels(labels)} {value(t)} {t0 + t}")

    def gauge(name: str, series: list[tuple[dict, range, callable]]):
        lines.append(f"# TYPE {name} gauge")
        for labels, ts, value in series:
            for t in ts:
                lines.append(f"{name}{_fmt_labels(labels)} {value(t)} {t0 + t}")

    def histogram(name: str, series: list[tuple]):
        # `per` observations per scrape from `start` until `until`, all in bucket `le`, each of `size` s
        lines.append(f"# TYPE {name} histogram")
        for labels, ts, le, per, size, start, until in series:
            for t in ts:
                n = per * ((min(t, until) - start) // STEP)
                for b in BUCKETS:
                    count = n if b == "+Inf" or float(b) >= float(le) else 0
                    lines.append(f"{name}_bucket{_fmt_labels({**labels, 'le': b})} {count} {t0 + t}")
                lines.append(f"{name}_count{_fmt_labels(labels)} {n} {t0 + t}")
                lines.append(f"{name}_sum{_fmt_labels(labels)} {n * size:.6f} {t0 + t}")

    base = {**common, "method": "baseline", "engine": "0"}
    eagle = {e: {**common, "method": "eagle3", "engine": e} for e in ENGINES}
    b_ts = range(BASELINE[0], BASELINE[1] + 1, STEP)
    e_ts = range(EAGLE[0], EAGLE[1] + 1, STEP)

    def steps(start: int, until: int):  # scrapes with traffic since `start`, up to t
        return lambda t: (min(t, until) - start) // STEP

    e_steps = steps(EAGLE[0], EAGLE_BUSY_UNTIL)
    for name, idx in ((m.SPEC_NUM_DRAFTS, 0), (m.SPEC_NUM_DRAFT_TOKENS, 1)):
        counter(name, [(eagle[e], e_ts, lambda t, e=e, i=idx: ENGINES[e][i] * e_steps(t)) for e in ENGINES])
    counter(
        m.SPEC_NUM_ACCEPTED_TOKENS, [(eagle[e], e_ts, lambda t, e=e: sum(ENGINES[e][2]) * e_steps(t)) for e in ENGINES]
    )
    counter(
        m.SPEC_ACCEPTED_PER_POS,
        [
            ({**eagle[e], "position": str(p)}, e_ts, lambda t, e=e, p=p: ENGINES[e][2][p] * e_steps(t))
            for e in ENGINES
            for p in range(3)
        ],
    )
    counter(
        m.GENERATION_TOKENS,
        [(base, b_ts, lambda t: 50 * steps(0, 10**9)(t))]
        + [(eagle[e], e_ts, lambda t, e=e: (ENGINES[e][0] + sum(ENGINES[e][2])) * e_steps(t)) for e in ENGINES],
    )
    counter(m.NUM_PREEMPTIONS, [(base, b_ts, lambda t: 0)] + [(eagle[e], e_ts, lambda t: 0) for e in ENGINES])
    gauge(m.NUM_REQUESTS_RUNNING, [(base, b_ts, lambda t: 4)] + [(eagle[e], e_ts, lambda t: 8) for e in ENGINES])
    gauge(m.NUM_REQUESTS_WAITING, [(base, b_ts, lambda t: 1)] + [(eagle[e], e_ts, lambda t: 0) for e in ENGINES])
    gauge(
        m.KV_CACHE_USAGE,
        [(base, b_ts, lambda t: 0.3), (eagle["0"], e_ts, lambda t: 0.5), (eagle["1"], e_ts, lambda t: 0.6)],
    )
    histogram(
        m.TIME_PER_OUTPUT_TOKEN,
        [(base, b_ts, "0.05", 2, 0.04, 0, BASELINE[1])]
        + [(eagle[e], e_ts, "0.025", 3, 0.02, EAGLE[0], EAGLE_BUSY_UNTIL) for e in ENGINES],
    )
    histogram(
        m.INTER_TOKEN_LATENCY,
        [(base, b_ts, "0.05", 40, 0.04, 0, BASELINE[1])]
        + [(eagle[e], e_ts, "0.1", 20, 0.06, EAGLE[0], EAGLE_BUSY_UNTIL) for e in ENGINES],
    )

    win = []
    for method, phase, task, conc, start, end in WINDOWS:
        labels = {
            "job": m.SCRAPE_JOB,
            "instance": "collector:9477",
            "run_id": "r1",
            "method": method,
            "phase": phase,
            "task": task,
            "concurrency": conc,
        }
        ts = range(math.ceil(start / STEP) * STEP, DURATION + 1, STEP)
        win.append((labels, ts, start, end))
    gauge(
        m.WINDOW_ACTIVE,
        [(lb, ts, lambda t, s=s, e=e: 1 if t <= e else 0) for lb, ts, s, e in win]
        + [({**win[0][0], "run_id": "jitter"}, JITTER_TS, lambda t: 1 if t == JITTER_OPEN else 0)],
    )
    gauge(m.WINDOW_START, [(lb, ts, lambda t, s=s: f"{t0 + s:.3f}") for lb, ts, s, e in win])
    gauge(
        m.WINDOW_END,
        [
            (lb, range(math.ceil(e / STEP) * STEP, DURATION + 1, STEP), lambda t, e=e: f"{t0 + e:.3f}")
            for lb, ts, s, e in win
        ],
    )
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


@dataclass
class Prom:
    url: str
    t0: int
    exporter: WindowExporter

    def query(self, expr: str, at: float) -> list[dict]:
        r = requests.get(f"{self.url}/api/v1/query", params={"query": expr, "time": f"{at:.3f}"}, timeout=30)
        body = r.json()
        assert r.status_code == 200 and body["status"] == "success", f"{body.get('error')}\n{expr}"
        return body["data"]["result"]

    def query_range(self, expr: str, start: float, end: float, step: int = STEP) -> list[dict]:
        r = requests.get(
            f"{self.url}/api/v1/query_range",
            params={"query": expr, "start": start, "end": end, "step": step},
            timeout=30,
        )
        body = r.json()
        assert r.status_code == 200 and body["status"] == "success", f"{body.get('error')}\n{expr}"
        return body["data"]["result"]


@pytest.fixture(scope="module")
def prom(tmp_path_factory) -> Prom:
    promtool = binary("promtool")
    tmp = tmp_path_factory.mktemp("prometheus")
    t0 = (int(time.time()) // 3600) * 3600 - 3 * 3600
    data = tmp / "history.om"
    data.write_text(synthetic_openmetrics(t0))
    subprocess.run(
        [promtool, "tsdb", "create-blocks-from", "openmetrics", "--quiet", str(data), str(tmp / "tsdb")],
        check=True,
        capture_output=True,
        timeout=120,
    )
    exporter = WindowExporter(port=0)
    config = {
        "global": {"scrape_interval": definitions.SCRAPE_INTERVAL},
        "scrape_configs": [
            {
                "job_name": m.SCRAPE_JOB,
                "scrape_interval": "1s",
                "static_configs": [{"targets": [f"127.0.0.1:{exporter.port}"]}],
            }
        ],
    }
    server = Prometheus(tmp, config=config, tsdb=tmp / "tsdb", retention="30d")
    try:
        yield Prom(server.url, t0, exporter)
    finally:
        server.stop()
        exporter.shutdown(max_wait=0)


def render(expr: str, *, method: str = ".*", run_id: str = ".*", range_s: int = DURATION) -> str:
    """What Grafana sends for an expression (variables and interval macros substituted)."""
    return generate.render(
        expr,
        variables={"method": method, "run_id": run_id},
        rate_interval=RATE_INTERVAL,
        range_=f"{range_s}s",
        interval=f"{STEP}s",
    )


def all_queries() -> list[tuple[str, str, str]]:
    return [
        (name, where, expr)
        for name in definitions.DASHBOARDS
        for where, expr in generate.queries(definitions.DASHBOARDS[name]())
    ]


def panel_targets(dashboard: str, title: str) -> dict[str, str]:
    """legendFormat (or refId) -> expr of a panel's targets."""
    data = definitions.DASHBOARDS[dashboard]()
    (panel,) = [p for p in generate.iter_panels(data) if p["title"] == title]
    return {t["legendFormat"] if t["legendFormat"] != "__auto" else t["refId"]: t["expr"] for t in panel["targets"]}


def values(result: list[dict]) -> list[float]:
    return [float(s["value"][1]) for s in result]


SPEC = "specstack-spec-decode.json"
EAGLE_SEL = dict(method="eagle3", run_id="r1")


def test_every_query_is_valid_promql_without_nan_or_inf(prom: Prom):
    """All targets, variables and annotations: no error, and no NaN/Inf at any 5 s step of the history."""
    queries = all_queries()
    assert len(queries) > 40
    for name, where, expr in queries:
        for sel in ({}, EAGLE_SEL, dict(method="baseline", run_id="r1"), dict(method="nope", run_id=".*")):
            prom.query(render(expr, **sel), prom.t0 + 1200)
        series = prom.query_range(render(expr, range_s=600), prom.t0, prom.t0 + DURATION)
        for s in series:
            bad = [v for _, v in s["values"] if not math.isfinite(float(v))]
            assert not bad, f"{name} {where}: {len(bad)} non-finite values for {s['metric']}\n{expr}"


def test_variables_list_the_methods_and_runs(prom: Prom):
    data = definitions.DASHBOARDS[SPEC]()
    method_q, run_q = (v["query"] for v in data["templating"]["list"])
    got = {s["metric"]["method"] for s in prom.query(render(method_q), prom.t0 + 700)}
    assert got == {"baseline", "eagle3"}
    got = {s["metric"]["run_id"] for s in prom.query(render(run_q, method="eagle3"), prom.t0 + 1200)}
    assert got == {"r1"}


def test_spec_panels_give_the_expected_numbers(prom: Prom):
    at = prom.t0 + 1200  # eagle3 busy, both engines

    def one(title: str, legend: str = "A", **kw) -> float:
        (v,) = values(prom.query(render(panel_targets(SPEC, title)[legend], **EAGLE_SEL, **kw), at))
        return v

    assert one("Draft acceptance rate") == pytest.approx(ACCEPTED / DRAFT_TOKENS)  # 0.4
    assert one("Mean acceptance length") == pytest.approx(1 + ACCEPTED / DRAFTS)  # 2.2
    assert one("Share of output tokens from drafts") == pytest.approx(ACCEPTED / GENERATED)
    assert one("Output tokens / s") == pytest.approx(GENERATED / STEP)
    assert one("Drafts (verification steps with drafts) / s") == pytest.approx(DRAFTS / STEP)
    flow = "Draft tokens / s: proposed, accepted, rejected"
    assert one(flow, "proposed") == pytest.approx(DRAFT_TOKENS / STEP)
    assert one(flow, "accepted") == pytest.approx(ACCEPTED / STEP)
    assert one(flow, "rejected") == pytest.approx((DRAFT_TOKENS - ACCEPTED) / STEP)
    assert one("KV-cache usage") == pytest.approx(0.6)  # max over engines
    assert one("Running and waiting requests", "running") == 16  # sum over engines
    assert 0.01 < one("TPOT (time per output token), server histogram", "p50") <= 0.025
    assert one("TPOT (time per output token), server histogram", "mean") == pytest.approx(0.02)
    assert 0.05 < one("ITL per engine step, server histogram", "p99") <= 0.1

    over_time = prom.query(
        render(panel_targets(SPEC, "Acceptance by draft position over time")["pos {{position}}"], **EAGLE_SEL), at
    )
    got = {int(s["metric"]["position"]): float(s["value"][1]) for s in over_time}
    assert got == pytest.approx(dict(enumerate(EXPECTED_POS)))
    assert all(set(s["metric"]) == {"method", "run_id", "position"} for s in over_time)


def test_range_panels_over_a_window_match_the_counter_deltas(prom: Prom):
    """Instant panels with $__range = the acceptance window, evaluated at its end (what Grafana does)."""
    method, phase, task, conc, start, end = WINDOWS[3]
    at, range_s = prom.t0 + end, round(end - start)

    def one(title: str, dashboard: str = SPEC) -> list[dict]:
        return prom.query(render(panel_targets(dashboard, title)["A"], **EAGLE_SEL, range_s=range_s), at)

    bars = {int(s["metric"]["position"]): float(s["value"][1]) for s in one("Acceptance by draft position (range)")}
    assert bars == pytest.approx(dict(enumerate(EXPECTED_POS)), rel=1e-9)
    assert values(one("Mean acceptance length (range)"))[0] == pytest.approx(1 + ACCEPTED / DRAFTS)
    (drafts,) = values(one("Drafts (range)"))
    assert drafts == pytest.approx(DRAFTS * range_s / STEP, rel=0.05)
    per_method = one("Acceptance by draft position by method (range)", "specstack-comparison.json")
    assert {(s["metric"]["method"], s["metric"]["position"]) for s in per_method} == {
        ("eagle3", str(p)) for p in range(3)
    }


def test_no_drafts_gives_no_data_never_zero_or_nan(prom: Prom):
    """Baseline (no spec counters at all) and an idle spec server: every spec panel is empty -> "No drafts"."""
    data = definitions.DASHBOARDS[SPEC]()
    spec_exprs = [
        (p["title"], t["expr"])
        for p in generate.iter_panels(data)
        for t in p.get("targets") or []
        if m.SPEC_PREFIX in t["expr"]
    ]
    assert len(spec_exprs) >= 10
    for title, expr in spec_exprs:
        assert prom.query(render(expr, method="baseline", run_id="r1", range_s=300), prom.t0 + 400) == [], title
    idle_at = prom.t0 + EAGLE_BUSY_UNTIL + 200
    for title, expr in spec_exprs:
        result = prom.query(render(expr, **EAGLE_SEL, range_s=120), idle_at)
        if title.startswith("Draft tokens") or title.startswith("Drafts"):
            assert all(v == 0 for v in values(result)), title  # counts, not ratios: 0 is the truth
        else:
            assert result == [], title
    # the engine panels still show the baseline
    assert values(
        prom.query(render(panel_targets(SPEC, "Output tokens / s")["A"], method="baseline", run_id="r1"), prom.t0 + 400)
    ) == [pytest.approx(10.0)]


def _grafana_regions(series_values: list, step: int) -> list[tuple[float, float]]:
    """Grafana's Prometheus annotation processing: points > 0 no more than `step` apart form one region."""
    regions: list[list[float]] = []
    for t, v in series_values:
        if float(v) <= 0:
            continue
        if regions and regions[-1][1] + step >= t:
            regions[-1][1] = t
        else:
            regions.append([t, t])
    return [tuple(r) for r in regions]


def test_annotations_mark_the_windows(prom: Prom):
    data = definitions.DASHBOARDS["specstack-comparison.json"]()
    found = {}
    for anno in data["annotations"]["list"]:
        for s in prom.query_range(render(anno["target"]["expr"], run_id="r1"), prom.t0, prom.t0 + DURATION):
            # Prometheus drops empty labels: task/concurrency "" are absent
            key = (
                s["metric"]["method"],
                s["metric"]["phase"],
                s["metric"].get("task", ""),
                s["metric"].get("concurrency", ""),
            )
            assert key not in found
            found[key] = (anno["name"], _grafana_regions(s["values"], STEP))
    assert set(found) == {win[:4] for win in WINDOWS}
    names = {"warmup": "Warm-up windows", "acceptance": "Acceptance windows", "bench": "Bench windows"}
    for method, phase, task, conc, start, end in WINDOWS:
        name, regions = found[(method, phase, task, conc)]
        assert name == names[phase]
        (region,) = regions
        # drawn at scrape resolution: within one scrape of the exact times
        assert abs(region[0] - (prom.t0 + start)) <= STEP and abs(region[1] - (prom.t0 + end)) <= STEP


def test_a_window_of_one_scrape_between_steps_is_drawn(prom: Prom):
    """Steps 5 ms before the samples: the gauge itself (`active > 0`) shows nothing at any step, the annotation's
    max over each step shows the window at the step after its one open sample."""
    start, end = prom.t0 + 1604.995, prom.t0 + 1624.995
    assert prom.query_range(f'{m.WINDOW_ACTIVE}{{run_id="jitter"}} > 0', start, end) == []
    anno = definitions.DASHBOARDS[SPEC]()["annotations"]["list"][1]  # acceptance windows
    (s,) = prom.query_range(render(anno["target"]["expr"], run_id="jitter"), start, end)
    assert [float(t) - prom.t0 for t, _ in s["values"]] == [pytest.approx(1614.995)]


def test_windows_table_has_exact_times(prom: Prom):
    targets = panel_targets("specstack-comparison.json", "Run windows (exact times)")
    at = prom.t0 + DURATION
    start = {
        s["metric"]["phase"] + s["metric"]["method"]: float(s["value"][1])
        for s in prom.query(render(targets["A"], run_id="r1"), at)
    }
    end = {
        s["metric"]["phase"] + s["metric"]["method"]: float(s["value"][1])
        for s in prom.query(render(targets["B"], run_id="r1"), at)
    }
    duration = {
        s["metric"]["phase"] + s["metric"]["method"]: float(s["value"][1])
        for s in prom.query(render(targets["C"], run_id="r1"), at)
    }
    for method, phase, _task, _conc, s, e in WINDOWS:
        assert start[phase + method] == pytest.approx((prom.t0 + s) * 1000, abs=1)
        assert end[phase + method] == pytest.approx((prom.t0 + e) * 1000, abs=1)
        assert duration[phase + method] == pytest.approx(e - s, abs=1e-3)


def test_position_plot_matches_the_panel_and_handles_no_drafts(prom: Prom, tmp_path: Path):
    method, phase, task, conc, start, end = WINDOWS[3]
    png = tmp_path / "bundle" / "acceptance_by_position.png"
    got = plot_acceptance_by_position(prom.url, prom.t0 + start, prom.t0 + end, EAGLE_SEL, png)
    assert got == pytest.approx(EXPECTED_POS, rel=1e-9)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    for labels, (s, e) in [
        (dict(method="baseline", run_id="r1"), (100, 300)),  # no spec counters
        (EAGLE_SEL, (EAGLE_BUSY_UNTIL + 60, EAGLE_BUSY_UNTIL + 250)),  # spec server idle
        (dict(method="eagle3", run_id="other"), (760, 1000)),
    ]:  # no such run
        out = tmp_path / f"none-{labels['method']}-{s}.png"
        assert plot_acceptance_by_position(prom.url, prom.t0 + s, prom.t0 + e, labels, out) is None
        assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ValueError):
        plot_acceptance_by_position(prom.url, prom.t0 + 10, prom.t0 + 10, EAGLE_SEL, tmp_path / "x.png")


def test_live_window_exporter_scraped_by_prometheus(prom: Prom):
    """The collector's exporter, scraped for real: labels survive the scrape and the annotation query sees it."""
    exp = prom.exporter
    anno = definitions.DASHBOARDS[SPEC]()["annotations"]["list"][2]["target"]["expr"]  # bench windows
    rec = exp.open(m.PHASE_BENCH, run_id="live", method="eagle3", task="code", concurrency=8)
    deadline = time.monotonic() + 20
    while not prom.query(render(anno, method="eagle3", run_id="live"), time.time()):
        assert time.monotonic() < deadline, "Prometheus never saw the open window"
        time.sleep(0.5)
    (s,) = prom.query(render(anno, method="eagle3", run_id="live"), time.time())
    assert s["metric"] == {
        "job": m.SCRAPE_JOB,
        "instance": f"127.0.0.1:{exp.port}",
        "run_id": "live",
        "method": "eagle3",
        "phase": "bench",
        "task": "code",
        "concurrency": "8",
    }
    exp.close()
    end_q = f'{m.WINDOW_END}{{run_id="live"}}'
    while not prom.query(end_q, time.time()):
        assert time.monotonic() < deadline, "Prometheus never saw the window close"
        time.sleep(0.5)
    assert values(prom.query(end_q, time.time())) == [pytest.approx(rec["end"], abs=1e-3)]
    # the region ends within one step of the close: the max over the step lets go of the last 1
    while prom.query(render(anno, method="eagle3", run_id="live"), time.time()):
        assert time.time() < rec["end"] + STEP + 3, "the annotation outlived its window by more than a step"
        time.sleep(0.5)
