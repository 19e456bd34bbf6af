"""The arithmetic of the harness benchmarks, free of I/O (unit-tested): durations, CPU shares, paired
intervals, overhead, growth, and what vLLM's log says about start-up."""

from __future__ import annotations

import math
import re
import statistics
from pathlib import Path
from typing import Any

from selfbench.prometheus import SHIPPED_CONFIG

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")


_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str) -> float:
    """A Prometheus duration ("5s", "500ms", "1m30s") in seconds."""
    text = str(text).strip()
    parts = _DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"not a Prometheus duration: {text!r}")
    return sum(float(n) * _UNIT[u] for n, u in parts)


def shipped_scrape_interval(path: Path = SHIPPED_CONFIG, job: str = "vllm") -> float:
    """The scrape interval the shipped config gives `job` (its own, else the global one), in seconds."""
    import yaml

    config = yaml.safe_load(path.read_text())
    interval = (config.get("global") or {}).get("scrape_interval", "1m")  # Prometheus's own default
    for entry in config.get("scrape_configs") or []:
        if entry.get("job_name") == job and "scrape_interval" in entry:
            interval = entry["scrape_interval"]
    return parse_duration(interval)


def cpu_fraction(cpu_seconds: float, window_seconds: float, cores: int) -> float | None:
    """CPU seconds as a share of everything the machine could do in the window."""
    capacity = window_seconds * cores
    return cpu_seconds / capacity if capacity > 0 else None


_T975 = (
    12.706,
    4.303,
    3.182,
    2.776,
    2.571,
    2.447,
    2.365,
    2.306,
    2.262,
    2.228,
    2.201,
    2.179,
    2.160,
    2.145,
    2.131,
    2.120,
    2.110,
    2.101,
    2.093,
    2.086,
    2.080,
    2.074,
    2.069,
    2.064,
    2.060,
    2.056,
    2.052,
    2.048,
    2.045,
    2.042,
)


def t975(df: int) -> float:
    """Two-sided 95 % Student t quantile (conservative steps above 30 degrees of freedom)."""
    if df < 1:
        return math.inf
    if df <= len(_T975):
        return _T975[df - 1]
    return 2.021 if df <= 40 else 2.000 if df <= 60 else 1.980 if df <= 120 else 1.960


def paired_interval(on: list[float], off: list[float]) -> dict:
    """Mean relative difference (on - off) / off in % over pairs, with its 95 % t interval."""
    if len(on) != len(off):
        raise ValueError("on and off need the same number of rounds")
    diffs = [100.0 * (a - b) / b for a, b in zip(on, off) if b]
    n = len(diffs)
    out: dict[str, Any] = {
        "pairs": n,
        "diffs_pct": diffs,
        "mean_diff_pct": statistics.fmean(diffs) if diffs else None,
        "sd_pct": statistics.stdev(diffs) if n > 1 else None,
        "ci95_pct": None,
        "half_width_pct": None,
    }
    if n > 1:
        half = t975(n - 1) * out["sd_pct"] / math.sqrt(n)
        out["half_width_pct"] = half
        out["ci95_pct"] = [out["mean_diff_pct"] - half, out["mean_diff_pct"] + half]
    runs = list(on) + list(off)
    out["run_cv_pct"] = 100 * statistics.stdev(runs) / statistics.fmean(runs) if len(runs) > 1 else None
    return out


def overhead_of(timings: dict, outer_wall: float | None = None) -> dict:
    """Wall time of a run minus its measured parts (server ready + acceptance + bench)."""
    parts = sum(float(timings.get(k) or 0.0) for k in ("server_ready", "acceptance", "bench"))
    total = float(timings["total"])
    out = {"total": total, "parts": parts, "overhead": total - parts}
    if outer_wall is not None:
        out.update(outer_wall=outer_wall, overhead_outer=outer_wall - parts)
    return out


_LOG_TIME = re.compile(r"INFO (\d\d-\d\d \d\d:\d\d:\d\d) ")


def _log_time(line: str) -> float | None:
    m = _LOG_TIME.search(line)
    if m is None:
        return None
    month_day, clock = m.group(1).split()
    h, mi, sec = (int(x) for x in clock.split(":"))
    return (int(month_day.split("-")[1]) * 86400) + h * 3600 + mi * 60 + sec


def model_inspection_seconds(log_text: str) -> float | None:
    """Seconds (1 s resolution) from vLLM logging its arguments to its first "Resolved architecture": where
    the API server inspects the model class in a subprocess unless VLLM_CACHE_ROOT/modelinfos has it."""
    start = end = None
    for line in log_text.splitlines():
        if start is None and "non-default args:" in line:
            start = _log_time(line)
        elif start is not None and "Resolved architecture:" in line:
            end = _log_time(line)
            break
    return end - start if start is not None and end is not None else None


def growth(points: list[tuple[float, float]]) -> dict:
    """How cost grows with size: per-step ratios and the log-log slope (1.0 = linear)."""
    points = sorted(points)
    ratios = [
        {"size_ratio": b[0] / a[0], "cost_ratio": (b[1] / a[1]) if a[1] else None} for a, b in zip(points, points[1:])
    ]
    usable = [(math.log(s), math.log(c)) for s, c in points if s > 0 and c > 0]
    slope = None
    if len(usable) > 1:
        mx, my = statistics.fmean(x for x, _ in usable), statistics.fmean(y for _, y in usable)
        sxx = sum((x - mx) ** 2 for x, _ in usable)
        slope = sum((x - mx) * (y - my) for x, y in usable) / sxx if sxx else None
    return {"steps": ratios, "loglog_slope": slope}
