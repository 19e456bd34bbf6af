"""The bench-load report: verdicts against the goals, one row per figure, and the printed text."""

from __future__ import annotations

from selfbench.harness_report import verdict
from selfbench.load import GOALS
from specstack.report.format import fixed


def verdicts(report: dict) -> dict:
    plan = report["plan"]
    big = report["acceptance"]["rss"]
    s = big["memory"]["slope_mib_per_100_requests_second_half"]
    long = (report.get("bench") or {}).get("long") or {}
    b = (long.get("memory") or {}).get("slope_mib_per_min_last_3_4")
    p = report["metrics_parse"]
    return {
        "acceptance_no_growth": None
        if s is None
        else (
            s <= GOALS["acceptance_mib_per_100_requests"]
            and big["window"]["status"] == "ok"
            and big["window"]["checks_ok"]
        ),
        "bench_no_growth": None
        if b is None
        else (b <= GOALS["bench_mib_per_minute"] and long["window"]["status"] == "ok"),
        "parse_fast": p["page_bytes"] >= plan["page_mb"] * 1e6 and p["parse_seconds"] <= GOALS["parse_seconds"],
    }


def summary_rows(report: dict) -> list[tuple[str, str, str, str]]:
    plan, v = report["plan"], report["verdicts"]
    rows = []
    for key, acc in report["acceptance"].items():
        mem, w, tm = acc["memory"], acc["window"], acc.get("tracemalloc")
        at = mem["rss_at_mib"]
        main = key == "rss"
        traced = (
            f"; traced net {fixed(tm['net_growth_mib'], 2)} / peak {fixed(tm['peak_above_start_mib'], 2)} MiB"
            if tm
            else ""
        )
        rows.append(
            (
                f"{acc['requests']} acceptance requests, one window{', tracemalloc on' if tm else ''} "
                f"(c={acc['concurrency']}, {fixed(w['seconds'], 1)} s, {w['status']}, {w['checks']} checks "
                f"{'ok' if w['checks_ok'] else 'NOT ok'})",
                f"RSS {fixed(at['0%'], 1)} → 10 % {fixed(at['10%'], 1)} → 50 % {fixed(at['50%'], 1)} → "
                f"100 % {fixed(at['100%'], 1)} MiB; slope {fixed(mem['slope_mib_per_100_requests_second_half'], 3)} "
                f"MiB/100 req" + traced,
                f"≤ {GOALS['acceptance_mib_per_100_requests']} MiB/100 req" if main else "",
                verdict(v["acceptance_no_growth"]) if main else "",
            )
        )
    ratio = report["acceptance_peak_ratio"]
    rows.append(
        (
            f"traced peak, {plan['requests']} vs {plan['small_requests']} requests",
            f"× {fixed(ratio['tracemalloc_peak_ratio'])} for × {fixed(ratio['requests_ratio'], 0)} requests",
            "",
            "",
        )
    )
    bench = report.get("bench") or {}
    long = bench.get("long")
    if long:
        mem = long["memory"]
        rows.append(
            (
                f"bench window {fixed(mem['minutes'], 1)} min, {long['completed']} requests at {long['rate']} req/s "
                f"({long['window']['status']}, checks {'ok' if long['window']['checks_ok'] else 'NOT ok'})",
                f"RSS {fixed(mem['rss_start_mib'], 1)} → {fixed(mem['rss_end_mib'], 1)} MiB (peak "
                f"{fixed(mem['rss_peak_mib'], 1)}); slope {fixed(mem['slope_mib_per_min_last_3_4'], 3)} MiB/min "
                f"= {fixed(mem['kib_per_request_from_slope'], 2)} KiB/request",
                f"≤ {GOALS['bench_mib_per_minute']} MiB/min",
                verdict(v["bench_no_growth"]),
            )
        )
    elif bench.get("error"):
        rows.append(("bench window", bench["error"], "", "MISSED"))
    client = ((bench.get("long") or {}).get("client_process")) or {}
    if client.get("samples"):
        rows.append(
            (
                "bench client (forked child of the collector), private memory (USS) during the window",
                f"{fixed(client['uss_first_mib'], 1)} → peak {fixed(client['uss_peak_mib'], 1)} MiB "
                f"(+{fixed(client['growth_mib'], 1)}); {'still alive' if client['alive_after_window'] else 'gone'} "
                "after the window",
                "",
                "",
            )
        )
    p = report["metrics_parse"]
    rows.append(
        (
            f"/metrics page {p['page_bytes'] / 1e6:.2f} MB, {p['page_lines']} lines ({p['engines']} engines, "
            f"{p['kept_lines']} kept)",
            f"parse {1000 * p['parse_seconds']:.0f} ms (line filter {1000 * p.get('filter_seconds', 0):.0f} ms; "
            f"{fixed(p['parse_peak_mib'], 1)} MiB peak); parse both + diff {1000 * p['diff_seconds']:.0f} ms",
            f"≤ {1000 * GOALS['parse_seconds']:.0f} ms",
            verdict(v["parse_fast"]),
        )
    )
    if p.get("real"):
        r = p["real"]
        rows.append(
            (
                "real vLLM /metrics (ngram, tiny model)",
                f"{r['page_bytes'] / 1e3:.0f} KB, {r['page_lines']} lines, parse {1000 * r['parse_seconds']:.1f} ms",
                "",
                "",
            )
        )
    return rows


def format_report(report: dict) -> str:
    m = report["machine"]
    lines = [
        f"specstack bench-load ({'quick' if report['quick'] else 'full'}) {report['date']}",
        f"machine: {m['cpu_model']}, {m['logical_cores']} logical cores, {m['memory_gib']} GiB, "
        f"Python {m['python']}, vLLM {m.get('vllm')}",
        "load average (1/5/15 min): " + "; ".join(f"{k} {v}" for k, v in report["load"].items()),
        "",
    ]
    rows = summary_rows(report)
    width = max(len(r[0]) for r in rows)
    for figure, value, goal, said in rows:
        lines.append(f"{figure:<{width}}  {value}  {goal}  {said}".rstrip())
    return "\n".join(lines)
