"""The bench-harness report: one row per figure with its goal and verdict (the table of
docs/harness-performance.md), and the text printed at the end of a run."""

from __future__ import annotations

from selfbench.harness import GOALS
from selfbench.harness_runs import PROMETHEUS_PARTS
from specstack.report.format import num, pct, seconds


def pct3(x) -> str:
    return pct(x, 3)


def verdict(ok: bool | None) -> str:
    return "n/a" if ok is None else ("met" if ok else "MISSED")


def summary_rows(report: dict) -> list[tuple[str, str, str, str]]:
    """(figure, measured, goal, verdict) rows: the table of docs/harness-performance.md."""
    rows = []
    for key, part in (
        ("monitoring", monitoring_rows),
        ("overhead", overhead_rows),
        ("startup", startup_rows),
        ("scale", scale_rows),
    ):
        if report.get(key):
            rows += part(report[key])
    return rows


def monitoring_rows(mon: dict) -> list[tuple[str, str, str, str]]:
    """Part 1: monitoring CPU in and around bench windows, and the A/B."""
    rows = []
    f_in, f_all = mon.get("fraction_in_window"), mon.get("fraction_with_edges")
    rows.append(
        (
            f"Monitoring CPU in bench windows @ {mon['scrape_interval_seconds']:g} s scrapes "
            "(Prometheus + vLLM /metrics + exporter)",
            pct3(f_in),
            "≤ 0.5 %",
            verdict(None if f_in is None else f_in <= GOALS["monitoring_fraction"]),
        )
    )
    rows.append(
        (
            f"  ... plus the collector's snapshots at the window edges "
            f"({len(mon['windows'])} windows, mean {mon['window_seconds'] / max(1, len(mon['windows'])):.1f} s)",
            pct3(f_all),
            "≤ 0.5 %",
            verdict(None if f_all is None else f_all <= GOALS["monitoring_fraction"]),
        )
    )
    if mon.get("edge_cpu_per_window") is not None:
        rows.append(
            (
                "  edge CPU per window; windows needed to stay ≤ 0.5 % with edges",
                f"{1000 * mon['edge_cpu_per_window']:.0f} ms; ≥ {seconds(mon.get('break_even_window_seconds'), 1)}",
                "",
                "",
            )
        )
    for k, v in (mon.get("fraction") or {}).items():
        rows.append((f"    {k}", pct3(v), "", ""))
    ab = mon.get("ab") or {}
    if ab.get("mean_diff_pct") is not None:
        ci = ab.get("ci95_pct")
        rows.append(
            (
                f"A/B throughput, Prometheus scraping vs not ({ab['pairs']} pairs)",
                f"{ab['mean_diff_pct']:+.1f} % (95 % CI {ci[0]:+.1f} .. {ci[1]:+.1f} %)"
                if ci
                else f"{ab['mean_diff_pct']:+.1f} %",
                "bounds large effects only",
                "see note",
            )
        )
    return rows


def overhead_rows(ov: dict) -> list[tuple[str, str, str, str]]:
    """Part 2: harness overhead per method run, and what runs off its path."""
    rows = []
    for r in ov["runs"]:
        o = r["overhead"]["overhead_outer"]
        rows.append(
            (
                f"Harness overhead, run {r['run_id']} (wall − ready − acceptance − bench)",
                seconds(o),
                "≤ 3 s",
                verdict(o <= GOALS["overhead_seconds"]),
            )
        )
        inner = r["overhead"]["overhead"]
        rows.append(
            (
                "  ... by summary timings alone (timings.total leaves out pre-flight and the bundle)",
                seconds(inner),
                "≤ 3 s",
                verdict(inner <= GOALS["overhead_seconds"]),
            )
        )
        prom = sum(r["components"].get(k) or 0.0 for k in PROMETHEUS_PARTS)
        rows.append(
            (
                "  ... minus the Prometheus parts (a run without --windows-port/--prometheus-url)",
                seconds(o - prom),
                "≤ 3 s",
                verdict(o - prom <= GOALS["overhead_seconds"]),
            )
        )
        view = {k: v for k, v in (r.get("prometheus_view") or {}).items() if k != "status"}
        if view:
            rows.append(
                (
                    "  ... its acceptance windows in Prometheus's view (checked after publishing)",
                    "; ".join(f"{task} {state}" for task, state in view.items()),
                    "",
                    "",
                )
            )
    after = ov.get("after_the_runs") or {}
    if after:
        checks = after.get("prometheus_view_checks_seconds") or []
        rows.append(
            (
                "Prometheus view check per method, off the path (beside the next server's start)",
                ", ".join(seconds(c) for c in checks) or "n/a",
                "",
                "",
            )
        )
        rows.append(
            (
                "Sweep's end: last check + exporter's final scrape (once per sweep)",
                seconds(after.get("sweep_end_seconds")),
                "",
                "",
            )
        )
    return rows


def startup_rows(st: dict) -> list[tuple[str, str, str, str]]:
    """Part 3: vLLM start-up with an empty and a reused VLLM_CACHE_ROOT."""
    rows = []
    wc = st["with_collector"]
    rows.append(
        (
            "vLLM start: empty VLLM_CACHE_ROOT → reused (in `specstack run`)",
            f"{seconds(wc['first'], 1)} → {seconds(wc['second'], 1)} (× {wc['ratio']:.2f})" if wc["ratio"] else "n/a",
            "≤ 0.6 × (GPU goal)",
            "CPU: reported",
        )
    )
    for p in st.get("bare_pairs") or []:
        rows.append(
            (
                "vLLM start: empty → reused (bare start, nothing alongside)",
                f"{seconds(p['first'], 1)} → {seconds(p['second'], 1)} (× {num(p['ratio'])})",
                "≤ 0.6 × (GPU goal)",
                "CPU: reported",
            )
        )
        if p.get("control_empty") is not None:
            rows.append(
                (
                    "  control: third start, another empty folder",
                    f"{seconds(p['control_empty'], 1)} (× {num(p['control_ratio'])} of the first)",
                    "",
                    "",
                )
            )
    inspections = [wc.get("model_inspection_seconds") or {}] + [
        p.get("model_inspection_seconds") or {} for p in st.get("bare_pairs") or []
    ]
    text = "; ".join(
        " → ".join(seconds(i.get(k), 0) for k in ("first", "second", "control_empty") if k in i)
        for i in inspections
        if i
    )
    if text:
        rows.append(("  model-class inspection in those starts (what VLLM_CACHE_ROOT/modelinfos saves)", text, "", ""))
    return rows


def scale_rows(sc: dict) -> list[tuple[str, str, str, str]]:
    """Part 4: the collector's cost at 1x, 10x, 100x the default workload."""
    rows = []
    for lv in sc["levels"]:
        rows.append(
            (
                f"Collector at {lv['factor']}× ({lv['requests']} requests, {lv['page_lines']} /metrics lines, "
                f"{lv['kept_lines']} kept)",
                f"parse {1000 * lv['parse_seconds']:.1f} ms / {lv['parse_peak_bytes'] / 2**20:.1f} MiB; "
                f"aggregate {1000 * lv['aggregate_seconds']:.0f} ms / "
                f"{lv['aggregate_peak_bytes'] / 2**20:.1f} MiB",
                "linear",
                "",
            )
        )
    rows.append(
        (
            "Collector growth (log-log slope; 1 = linear)",
            f"parse time {num(sc['parse_growth']['loglog_slope'])}, aggregate time "
            f"{num(sc['aggregate_growth']['loglog_slope'])}, memory "
            f"{num(sc['parse_memory_growth']['loglog_slope'])} / "
            f"{num(sc['aggregate_memory_growth']['loglog_slope'])}",
            "≈ 1",
            verdict(
                all(
                    g["loglog_slope"] is not None and g["loglog_slope"] <= 1.2
                    for g in (
                        sc["parse_growth"],
                        sc["aggregate_growth"],
                        sc["parse_memory_growth"],
                        sc["aggregate_memory_growth"],
                    )
                )
            ),
        )
    )
    return rows


def format_report(report: dict) -> str:
    m = report["machine"]
    load = report.get("load", {})
    lines = [
        f"specstack bench-harness ({'quick' if report.get('quick') else 'full'}) {report['date']}",
        f"machine: {m['cpu_model']}, {m['logical_cores']} logical cores ({m.get('physical_cores')} physical), "
        f"{m['memory_gib']} GiB, {m['platform']}, vLLM {m.get('vllm')}",
        "load average (1/5/15 min): " + "; ".join(f"{k} {v}" for k, v in load.items()),
        "",
    ]
    rows = summary_rows(report)
    width = max((len(r[0]) for r in rows), default=10)
    for figure, value, goal, verdict in rows:
        lines.append(f"{figure:<{width}}  {value:<44} {goal:<26} {verdict}")
    ov = report.get("overhead")
    if ov:
        lines += ["", "overhead, what the rest consists of (seconds):"]
        if report.get("vllm_import_seconds") is not None:
            lines.append(
                f"  (a fresh collector process imports vLLM once, in its first run's pre-flight: "
                f"{report['vllm_import_seconds']:.1f} s measured in a fresh process; the first run below "
                "is the first of this process, the second pays no imports, as in a sweep)"
            )
        for r in ov["runs"]:
            parts = ", ".join(f"{k} {v:.2f}" for k, v in r["components"].items() if v is not None)
            inside = ", ".join(f"{k} {v:.2f}" for k, v in r["also_measured"].items())
            lines.append(f"  {r['run_id']}: {parts}")
            lines.append(f"    also measured (not additive): {inside}")
    mon = report.get("monitoring")
    if mon:
        rp, rg = mon["render"]["prometheus_accept"], mon["render"]["plain_get"]
        lines += [
            "",
            f"vLLM /metrics: {rp['page_bytes'] / 1024:.0f} KB, {rp['samples']} samples "
            f"({rp['spec_samples']} spec-decode); API-server CPU per scrape {1000 * rp['cpu_per_scrape']:.1f} ms "
            f"(OpenMetrics, as Prometheus asks), {1000 * rg['cpu_per_scrape']:.1f} ms (plain GET); "
            f"exporter render {1e6 * mon['exporter_cpu_per_scrape']:.0f} µs",
            f"bench windows measured: {len(mon['windows'])}, {mon['window_seconds']:.1f} s in total",
        ]
        ab = mon.get("ab") or {}
        if ab.get("prometheus_cpu_per_second_on") is not None:
            lines.append(
                f"A/B: Prometheus CPU {1000 * ab['prometheus_cpu_per_second_on']:.1f} ms/s while scraping "
                f"vLLM, {1000 * ab['prometheus_cpu_per_second_off']:.1f} ms/s while not"
            )
        if ab.get("pairs"):
            lines.append(
                f"A/B: {ab['pairs']} pairs, per-run CV {num(ab.get('run_cv_pct'))} %, "
                f"half-width of the 95 % CI ±{num(ab.get('half_width_pct'))} %; {ab['note']}"
            )
    return "\n".join(lines)
