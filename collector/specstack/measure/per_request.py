"""What one bench cell's per-request data (`vllm bench serve --save-detailed`: start_times, ttfts, itls,
latencies, errors; seconds) says that its percentiles cannot: a stall of the client or the host, and answers read
in a burst. Used by the summary (measure time) and by the report (from the raw bench JSON), so both say the same.

- Send pause (closed loop, no finite rate only): bench sends the next request as soon as a slot frees, so the
  k-th send (k >= c) is due when the (k-c+1)-th answer has finished; a send later than that by more than
  SEND_PAUSE_SHARE of the cell's median E2EL (and SEND_PAUSE_FLOOR_MS) is a pause in sending: the client did not
  run (seen: 0.87 s on 2 cores).
- Outliers: a request whose TTFT or E2EL exceeds OUTLIER_FACTOR x the cell's median and the median by more than
  OUTLIER_FLOOR_MS (seen: three requests of 0.99 s against a median TTFT of ~20 ms).
- Burst read: a chunk gap under BURST_GAP_MS is no engine step (one step of any vLLM takes longer) but a buffered
  read of chunks that had arrived already. Chunks read in a burst straight after the first token had their decode
  time counted in TTFT, so bench's TPOT of that request, (E2EL - TTFT) / (tokens - 1), is too small; a request
  whose leading burst holds more than SWALLOWED_MAX of its decode chunks has a TPOT off by more than that.
  Bursts later in the stream leave TPOT whole (E2EL - TTFT is unchanged) but make its ITL gaps meaningless.
"""

from __future__ import annotations

import statistics
from typing import Any, TypeGuard

SEND_PAUSE_SHARE = 0.25  # of the median E2EL: a pause that long shifts a closed loop's figures visibly
SEND_PAUSE_FLOOR_MS = 10.0
OUTLIER_FACTOR = 3.0
OUTLIER_FLOOR_MS = 50.0
BURST_GAP_MS = 0.1  # no engine step is this short: such a gap is a read of chunks buffered already
SWALLOWED_MAX = 0.10  # a request's TPOT is off by more than 10 % when its leading burst holds this share


def _ok_indices(bench: dict[str, Any]) -> list[int]:
    errors = bench.get("errors") or [""] * len(bench["ttfts"])
    return [i for i, e in enumerate(errors) if not e]


def has_requests(bench: dict[str, Any] | None) -> TypeGuard[dict[str, Any]]:
    """True when the bench JSON carries the per-request lists (`--save-detailed`)."""
    if not bench:
        return False
    return all(isinstance(bench.get(k), list) and bench.get(k) for k in ("start_times", "ttfts", "itls", "latencies"))


def send_pauses_ms(starts: list[float], ends: list[float], concurrency: int) -> list[float]:
    """Per request, in send order: how long after its slot freed it was sent (ms; the first c: after the first
    send). Times in seconds, on one clock."""
    order = sorted(starts)
    done = sorted(ends)
    pauses = []
    for k, t in enumerate(order):
        due = order[0] if k < concurrency else done[k - concurrency]
        pauses.append(max(0.0, (t - due) * 1000))
    return pauses


def _outliers(values: list[float]) -> list[float]:
    mid = statistics.median(values)
    return [v for v in values if v > OUTLIER_FACTOR * mid and v - mid > OUTLIER_FLOOR_MS]


def leading_burst(itls_ms: list[float]) -> int:
    """Chunks read in a burst straight after the first token (their decode time went into TTFT)."""
    n = 0
    for gap in itls_ms:
        if gap >= BURST_GAP_MS:
            break
        n += 1
    return n


def cell_figures(bench: dict[str, Any] | None, concurrency: int | None) -> dict[str, Any] | None:
    """The per-request figures of one cell, None without per-request data. `concurrency` None or a finite
    request rate (bench's `request_rate` not "inf"): the send schedule is not a closed loop, no send pause."""
    if not has_requests(bench):
        return None
    ok = _ok_indices(bench)
    if not ok:
        return None
    ttft = [bench["ttfts"][i] * 1000 for i in ok]
    e2el = [bench["latencies"][i] * 1000 for i in ok]
    itls = [[g * 1000 for g in (bench["itls"][i] or [])] for i in ok]
    starts = [bench["start_times"][i] for i in ok]
    closed = concurrency is not None and str(bench.get("request_rate", "inf")) == "inf"
    pauses = (
        send_pauses_ms(starts, [s + e / 1000 for s, e in zip(starts, e2el)], concurrency)
        if closed and concurrency is not None
        else []
    )  # closed implies a concurrency
    pause_limit = max(SEND_PAUSE_FLOOR_MS, SEND_PAUSE_SHARE * statistics.median(e2el))
    chunks = sum(len(x) for x in itls)
    bursts = sum(1 for x in itls for g in x if g < BURST_GAP_MS)
    swallowed = [leading_burst(x) / len(x) for x in itls if x]
    fig = {
        "requests": len(ok),
        "median_e2el_ms": statistics.median(e2el),
        "median_ttft_ms": statistics.median(ttft),
        "max_send_pause_ms": max(pauses) if closed else None,
        "send_pause_limit_ms": pause_limit if closed else None,
        "send_pauses": sum(p > pause_limit for p in pauses),
        "ttft_outliers": len(_outliers(ttft)),
        "e2el_outliers": len(_outliers(e2el)),
        "max_ttft_ms": max(ttft),
        "max_e2el_ms": max(e2el),
        "chunks": chunks,
        "burst_chunks": bursts,
        "burst_requests": sum(s > SWALLOWED_MAX for s in swallowed),
    }
    fig["stall"] = stall_text(fig)
    return fig


def stall_text(fig: dict[str, Any]) -> str | None:
    """The cell's stall signals in words, None when there is none."""
    parts = []
    if fig.get("send_pauses"):
        parts.append(f"{fig['send_pauses']} request(s) sent late, by up to {fig['max_send_pause_ms']:.0f} ms")
    for m in ("ttft", "e2el"):
        if fig.get(f"{m}_outliers"):
            parts.append(
                f"{fig[f'{m}_outliers']} {m.upper()} outlier(s) up to {fig[f'max_{m}_ms']:.0f} ms "
                f"(median {fig[f'median_{m}_ms']:.0f})"
            )
    return ", ".join(parts) or None


def tpot_degenerate(fig: dict[str, Any]) -> bool:
    """From per-request data: some request's TPOT is off by more than SWALLOWED_MAX (a burst read after its
    first token), so the cell's TPOT is no per-token time."""
    return bool(fig.get("burst_requests"))


def itl_degenerate(fig: dict[str, Any]) -> bool:
    """From per-request data: more than SWALLOWED_MAX of the cell's chunk gaps are burst reads."""
    return bool(fig.get("chunks")) and fig["burst_chunks"] > SWALLOWED_MAX * fig["chunks"]


def slower_than_serial(
    mean_e2el_ms: float | None, concurrency: int | None, serial_e2el_ms: float | None, tolerance: float = 0.10
) -> bool:
    """A closed-loop cell at concurrency c whose mean E2EL exceeds c x the c=1 cell's (beyond `tolerance`): its
    requests took longer than running them one after another would have, which batching never causes."""
    if not mean_e2el_ms or not serial_e2el_ms or not concurrency or concurrency <= 1:
        return False
    return mean_e2el_ms > concurrency * serial_e2el_ms * (1 + tolerance)
