"""The arithmetic of the comparison report, kept free of I/O so tests can pin it down.

- Speedups are ratios of medians over repeats: TPOT speedup = median(baseline TPOT) / median(method TPOT),
  throughput speedup = median(method tok/s) / median(baseline tok/s). > 1.0 means the method is better.
- The 95 % interval is a percentile bootstrap with a fixed seed, so the same bundle always gives the same
  interval. Repeats inside one server session are resampled independently on each side; they share the
  session, so the interval leaves session-to-session variance out (pseudo-replication) and is too narrow.
  Sessions run interleaved with their baseline (`--replicate sessions`: B M, M B, ...) are resampled as pairs:
  session i of the method with session i of the baseline, so drift that hits both stays paired.
  Under MIN_REPEATS on either side there is no interval: with 2 repeats a true 1.0x fell inside a 95 %
  percentile-bootstrap interval only about 70 % of the time (issue 18).
- What one more session would read: a 95 % prediction interval for a single new ratio, on the log scale, from
  the repeats' spread (Student's t; Welch's degrees of freedom for independent sides, n - 1 for session pairs).
  A confidence interval of the median is the wrong yardstick for one new measurement: with 3 repeats a side, a
  new run with nothing changed lands inside it only about two times in three (tests/figures/test_stats.py).
- A cell is unstable when its repeats spread more than MAX_RELATIVE_MAD (median absolute deviation / median),
  on either side: one noisy repeat then decides the median.
- A cell's host is busy when, in one of its bench windows (either side), processes outside the server's, the bench
  client's and the collector's trees took more than MAX_OTHER_CPU_SHARE of the window's core-seconds; its client is
  the bottleneck when the bench client used more than CLIENT_SATURATED of one core. Either marks the verdict.
- A p95/p99 from n samples is "unstable" when fewer than MIN_TAIL samples lie beyond it: n * (1 - p/100) < 10,
  i.e. p95 needs >= 200 samples and p99 >= 1000.
- None means "not measured / no drafts", never 0.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

SEED = 20251018  # fixed: the report of one bundle is reproducible byte for byte
BOOTSTRAP_RESAMPLES = 10_000
CONFIDENCE = 0.95
BOUND_TOLERANCE = 1.02  # a throughput ratio 2 % above tokens per target pass is beyond what drafting can give
BATCHING_GAIN_MIN = 1.10  # a c > 1 cell serving under this × its own c=1 throughput gained nothing from c
MIN_TAIL = 10  # samples that must lie beyond a percentile for it to count as stable
GAIN_TOLERANCE = 0.02  # K sweep: a K within 2 % of the best TPOT counts as "as good as the best"
MIN_REPEATS = 3  # fewer repeats (or sessions) on either side: no interval, the point estimate only
MAX_RELATIVE_MAD = 0.10  # a cell whose repeats spread more than this (MAD / median) is unstable
# Other processes' CPU time in a bench window as a share of its core-seconds (cores × seconds). A CPU server's
# OpenMP threads fill its cores, and a GPU server's scheduler loop is one busy core; time another process takes on
# those cores is taken from the server, so a cell can be slowed by up to about that share. 10 % is the size of the
# differences the verdicts judge (MAX_RELATIVE_MAD: repeats spreading more than this are unstable): beyond it the
# neighbour alone could move the cell by as much as the effect measured.
MAX_OTHER_CPU_SHARE = 0.10
# The bench client (`vllm bench serve`) is one asyncio event loop in one Python process: CPU-bound it can use at
# most about one core (the GIL). At 90 % of a core it is saturated: requests wait for the client (sending, reading
# chunks), not the server, and the cell measures the client.
CLIENT_SATURATED = 0.90


def median(values: Sequence[float]) -> float | None:
    vals = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    return float(np.median(vals)) if vals else None


def ratio(num: float | None, den: float | None) -> float | None:
    if num is None or den is None or den == 0:
        return None
    return num / den


@dataclass
class Interval:
    point: float | None  # ratio of medians
    low: float | None  # 2.5th percentile of the bootstrap distribution (None: fewer than 2 repeats)
    high: float | None
    n_num: int  # repeats on each side
    n_den: int

    @property
    def has_interval(self) -> bool:
        return self.low is not None and self.high is not None

    @property
    def crosses_one(self) -> bool | None:
        """True when the interval includes 1.0x (no clear difference); None without an interval."""
        low, high = self.low, self.high
        if low is None or high is None:
            return None
        return low <= 1.0 <= high

    def verdict(self, better: str = "faster", worse: str = "slower") -> str:
        if self.point is None:
            return "n/a"
        low, high = self.low, self.high
        if low is None or high is None:
            n = min(self.n_num, self.n_den)
            return f"no interval ({n} repeat{'s' if n != 1 else ''}; needs ≥ {MIN_REPEATS})"
        if low <= 1.0 <= high:
            return "no clear difference"
        return better if low > 1.0 else worse


def _clean(values: Sequence[float]) -> np.ndarray:
    return np.asarray([float(x) for x in values if x is not None], dtype=float)


def _percentiles(r: np.ndarray, confidence: float) -> tuple[float, float] | None:
    r = r[np.isfinite(r)]
    if r.size == 0:
        return None
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(r, [tail, 100 - tail])
    return float(low), float(high)


def bootstrap_ratio(
    num: Sequence[float],
    den: Sequence[float],
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = SEED,
    confidence: float = CONFIDENCE,
) -> Interval:
    """Median(num) / median(den) and its percentile-bootstrap interval (independent resampling of each side)."""
    a, b = _clean(num), _clean(den)
    if a.size == 0 or b.size == 0:
        return Interval(None, None, None, int(a.size), int(b.size))
    point = ratio(float(np.median(a)), float(np.median(b)))
    if point is None or a.size < MIN_REPEATS or b.size < MIN_REPEATS:
        return Interval(point, None, None, int(a.size), int(b.size))
    rng = np.random.default_rng(seed)
    ma = np.median(rng.choice(a, size=(resamples, a.size), replace=True), axis=1)
    mb = np.median(rng.choice(b, size=(resamples, b.size), replace=True), axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        bounds = _percentiles(ma / mb, confidence)
    if bounds is None:
        return Interval(point, None, None, int(a.size), int(b.size))
    return Interval(point, *bounds, int(a.size), int(b.size))


def paired_bootstrap_ratio(
    pairs: Sequence[tuple[float, float]],
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = SEED,
    confidence: float = CONFIDENCE,
) -> Interval:
    """Median(num) / median(den) over (num, den) pairs, one pair per session pair, and its percentile-bootstrap
    interval resampling whole pairs: the sessions are the unit of replication, and a drift that moved both
    sides of a pair stays inside the pair."""
    pairs = [(float(x), float(y)) for x, y in pairs if x is not None and y is not None]
    n = len(pairs)
    if n == 0:
        return Interval(None, None, None, 0, 0)
    a, b = np.asarray([p[0] for p in pairs]), np.asarray([p[1] for p in pairs])
    point = ratio(float(np.median(a)), float(np.median(b)))
    if point is None or n < MIN_REPEATS:
        return Interval(point, None, None, n, n)
    idx = np.random.default_rng(seed).integers(0, n, size=(resamples, n))
    with np.errstate(divide="ignore", invalid="ignore"):
        bounds = _percentiles(np.median(a[idx], axis=1) / np.median(b[idx], axis=1), confidence)
    if bounds is None:
        return Interval(point, None, None, n, n)
    return Interval(point, *bounds, n, n)


# Student's t, 97.5th percentile, for 1..30 degrees of freedom (the stack has no scipy); past 30 the value at 30,
# a little wide
T975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip


def t975(df: float) -> float:
    """Student's t at 97.5 % for df degrees of freedom, rounded down (a fractional Welch df: the wider value)."""
    return T975[min(max(int(df), 1), len(T975)) - 1]


def prediction_ratio(
    num: Sequence[float] = (), den: Sequence[float] = (), *, pairs: Sequence[tuple[float, float]] = ()
) -> tuple[float, float] | None:
    """The 95 % prediction interval of the ratio num/den that one more measurement would read: log-normal, from
    the sides' repeats (independent; Welch's df) or from session pairs (the log ratio of each pair; n - 1 df).
    None under MIN_REPEATS a side or pair, or with a value that is not positive."""
    if pairs:
        ok = [(x, y) for x, y in pairs if x is not None and y is not None]
        if len(ok) < MIN_REPEATS or any(x <= 0 or y <= 0 for x, y in ok):
            return None
        d = np.log([x for x, _ in ok]) - np.log([y for _, y in ok])
        center, var, df = float(d.mean()), float(d.var(ddof=1)) * (1 + 1 / d.size), d.size - 1.0
    else:
        a, b = _clean(num), _clean(den)
        if a.size < MIN_REPEATS or b.size < MIN_REPEATS or (a <= 0).any() or (b <= 0).any():
            return None
        la, lb = np.log(a), np.log(b)
        va, vb = float(la.var(ddof=1)) * (1 + 1 / a.size), float(lb.var(ddof=1)) * (1 + 1 / b.size)
        center, var = float(la.mean() - lb.mean()), va + vb
        df = var**2 / (va**2 / (a.size - 1) + vb**2 / (b.size - 1)) if var > 0 else a.size + b.size - 2.0
    half = t975(df) * math.sqrt(var)
    return math.exp(center - half), math.exp(center + half)


def relative_mad(values: Sequence[float]) -> float | None:
    """Median absolute deviation / median of the repeats: their spread, robust to one outlier. None under 2."""
    a = _clean(values)
    if a.size < 2:
        return None
    mid = float(np.median(a))
    return None if mid == 0 else float(np.median(np.abs(a - mid))) / abs(mid)


def stability(*sides: Sequence[float]) -> str:
    """ "single" (a side has one measurement), "unstable" (a side spreads more than MAX_RELATIVE_MAD) or "stable"."""
    if any(len(_clean(v)) < 2 for v in sides):
        return "single"
    spreads = [relative_mad(v) for v in sides]
    return "unstable" if any(s is not None and s > MAX_RELATIVE_MAD for s in spreads) else "stable"


def host_busy(*other_shares: float | None) -> bool | None:
    """True when other processes took more than MAX_OTHER_CPU_SHARE of a side's window core-seconds; None when no
    side measured it."""
    seen = [v for v in other_shares if v is not None]
    return any(v > MAX_OTHER_CPU_SHARE for v in seen) if seen else None


def client_bound(*bench_shares: float | None) -> bool | None:
    """True when a side's bench client used more than CLIENT_SATURATED of one core; None when no side measured it."""
    seen = [v for v in bench_shares if v is not None]
    return any(v > CLIENT_SATURATED for v in seen) if seen else None


def unstable(percentile: float, samples: float | None) -> bool:
    """A percentile estimated from `samples` values with fewer than MIN_TAIL of them beyond it."""
    if percentile <= 50:
        return False
    if not samples:
        return True
    return samples * (1 - percentile / 100) < MIN_TAIL


def min_samples(percentile: float) -> int:
    """Samples needed for `percentile` to be stable (200 for p95, 1000 for p99)."""
    return math.ceil(MIN_TAIL / (1 - percentile / 100) - 1e-9)


def target_passes(decode_tokens: int | None, drafts: int | None, accepted: int | None) -> int | None:
    """Decode forward passes of the target over a window: every pass emits one token of its own (the bonus or
    plain-decode token) plus the drafts it accepted, so passes = decode tokens − accepted. Steps on which the
    drafter proposed nothing (ngram, suffix) are passes too, which the verify-step count R leaves out. vLLM
    also counts drafts accepted past max_tokens that were never emitted; those make the difference undercount,
    so the passes are never fewer than R, the steps that verified a draft. Exact when every step drafted or no
    accepted draft was cut; otherwise within the cut drafts."""
    if decode_tokens is None or decode_tokens <= 0:
        return None
    return max(int(drafts or 0), int(decode_tokens) - int(accepted or 0))


def tokens_per_pass(decode_tokens: int | None, drafts: int | None, accepted: int | None) -> float | None:
    """The efficiency bound: decode tokens per target forward pass, all decode steps (1.0 without drafts)."""
    passes = target_passes(decode_tokens, drafts, accepted)
    return None if not passes or decode_tokens is None else decode_tokens / passes


def drafting_share(decode_tokens: int | None, drafts: int | None, accepted: int | None) -> float | None:
    """Share of the target's decode passes that verified at least one draft (1.0: the drafter always proposed)."""
    passes = target_passes(decode_tokens, drafts, accepted)
    return None if not passes else int(drafts or 0) / passes


def efficiency(tpot_speedup: float | None, bound: float | None) -> float | None:
    """Measured TPOT speedup as a fraction of the bound, the tokens per target forward pass: if a verify pass
    cost one plain decode step and drafting cost nothing, each pass would emit that many tokens in the time of
    one, and the TPOT speedup would equal it."""
    if tpot_speedup is None or bound is None or bound <= 0:
        return None
    return tpot_speedup / bound


def kv_loss(method_tokens: int | None, baseline_tokens: int | None) -> float | None:
    """Fraction of the baseline's KV-cache capacity (tokens) the method lost (negative: it has more)."""
    if method_tokens is None or not baseline_tokens:
        return None
    return 1 - method_tokens / baseline_tokens


def crossover(
    points: dict[float, float | None],
    lows: dict[float, float | None] | None = None,
    *,
    unit: str = "concurrency",
    suffix: str = "",
) -> dict[str, Any]:
    """Where a method stops beating the baseline as concurrency grows.

    `points`: concurrency -> speedup (> 1.0 = method better); `lows`: the lower ends of their 95 % intervals,
    where known. One test for every cell of the row: when every cell has an interval, a cell "beats" the
    baseline when its interval lies above 1.0x (low > 1.0); when any cell lacks one, every cell is judged by its
    point estimate (> 1.0x) and the text says so. Returns {"kind": always|never|crossover|mixed|n/a,
    "concurrency": the first non-winning concurrency after a win (crossover) or None, "last_win": the winning
    concurrency before it, "by": "interval"|"point", "text": one plain sentence}. `unit` and `suffix` name the
    load in the text (the open-loop rows: unit "rate", suffix " req/s"); the keys stay "concurrency".
    """

    def at(c: float) -> str:
        return f"{c:g}{suffix}"

    def listed(values: Iterable[float]) -> str:
        return ", ".join(at(c) for c in values)

    lows = lows or {}
    cs = sorted(c for c, v in points.items() if v is not None)
    if not cs:
        return {"kind": "n/a", "concurrency": None, "last_win": None, "by": None, "text": "n/a (no comparable cells)"}
    by_interval = all(lows.get(c) is not None for c in cs)
    judged = [lows[c] if by_interval else points[c] for c in cs]  # each known: by_interval, cs say so
    wins = [v is not None and v > 1.0 for v in judged]
    clearly = "clearly " if by_interval else ""
    said = "" if by_interval else f" (by point estimates: fewer than {MIN_REPEATS} repeats, no interval)"
    out: dict[str, Any] = {"by": "interval" if by_interval else "point"}
    if all(wins):
        return {
            **out,
            "kind": "always",
            "concurrency": None,
            "last_win": cs[-1],
            "text": f"{clearly}beats the baseline at every tested {unit} ({listed(cs)}){said}",
        }
    if not any(wins):
        return {
            **out,
            "kind": "never",
            "concurrency": None,
            "last_win": None,
            "text": f"never {clearly}beats the baseline (tested {listed(cs)}){said}",
        }
    if wins[0]:
        i = wins.index(False)
        rest = wins[i:]
        tail = "" if not any(rest) else f"; wins again at {listed([c for c, w in zip(cs[i:], rest) if w])}"
        return {
            **out,
            "kind": "crossover",
            "concurrency": cs[i],
            "last_win": cs[i - 1],
            "text": f"stops {clearly}beating the baseline at {unit} {at(cs[i])} (last win at {at(cs[i - 1])})"
            f"{tail}{said}",
        }
    won = [c for c, w in zip(cs, wins) if w]
    return {
        **out,
        "kind": "mixed",
        "concurrency": None,
        "last_win": None,
        "text": f"does not {clearly}beat the baseline at {unit} {at(cs[0])}, wins at {listed(won)}{said}",
    }


def first_divergence(a: Sequence[object], b: Sequence[object]) -> int | None:
    """Index of the first position where the sequences differ; None when they are equal.
    If one is a strict prefix of the other, the index is the shorter one's length."""
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return None if len(a) == len(b) else n


def gain_stop(tpot_by_k: dict[int, float | None], tolerance: float = GAIN_TOLERANCE) -> int | None:
    """The smallest K whose TPOT is within `tolerance` of the best (lowest) TPOT of the sweep: raising K beyond
    it bought less than that. None without data."""
    measured = {k: v for k, v in tpot_by_k.items() if v is not None}
    ks = sorted(measured)
    if not ks:
        return None
    best = min(measured[k] for k in ks)
    return next(k for k in ks if measured[k] <= best * (1 + tolerance))
