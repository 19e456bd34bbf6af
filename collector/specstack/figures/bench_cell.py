"""What a method's summary keeps of one `vllm bench serve` result file: bench's own figures under bench's names
(counts, throughputs, the `*_ms` latencies, the `spec_decode_*` figures; its acceptance rate as a fraction), and
what specstack derives from bench's per-request data (stalls and burst reads; goodput under --slo).

runs/method_summary.py builds each summary's bench cells with `cell_figures`; figures/recompute.py reads the file
again and holds the figures `copied` gives against it, so a hand-edited throughput or latency is found like an
edited acceptance rate."""

from __future__ import annotations

from typing import Any

from specstack.measure import goodput, per_request

BENCH_FIELDS = (
    "completed",
    "failed",
    "duration",
    "total_input_tokens",
    "total_output_tokens",
    "request_throughput",
    "output_throughput",
    "total_token_throughput",
)
# bench's "max_concurrent_requests" counts the requests active at any time within a one-second bucket, not
# requests in flight at once (a sub-second cell counts every request): kept under a name that says so
ACTIVE_IN_ONE_SECOND = "max_requests_active_in_one_second"
# summary key -> bench's own key, which summaries written before the rename (2026-12-01) kept instead (bench's value as is)
FORMER_NAMES = {ACTIVE_IN_ONE_SECOND: "max_concurrent_requests", "acceptance_rate": "spec_decode_acceptance_rate"}


def copied(bench: dict[str, Any]) -> dict[str, Any]:
    """The figures bench wrote, as the summary names them: what a reader can always hold against the file. Every
    key of BENCH_FIELDS and the acceptance rate even where bench left it out (None), the latencies and
    spec-decode figures bench wrote."""
    cell = {k: bench.get(k) for k in BENCH_FIELDS}
    cell[ACTIVE_IN_ONE_SECOND] = bench.get(FORMER_NAMES[ACTIVE_IN_ONE_SECOND])
    # bench writes its acceptance rate in percent; the summary keeps every rate as a fraction (acceptance_rate)
    cell.update(
        {
            k: v
            for k, v in bench.items()
            if k.endswith("_ms") or k.startswith("spec_decode_") and k != "spec_decode_acceptance_rate"
        }
    )
    rate = bench.get("spec_decode_acceptance_rate")
    cell["acceptance_rate"] = None if rate is None else rate / 100
    return cell


def cell_figures(bench: dict[str, Any], slo: dict[str, float] | None, concurrency: int | None) -> dict[str, Any]:
    """Everything the summary keeps of one bench result: `copied`, then what specstack derives from it."""
    cell = copied(bench)
    # stalls and burst reads, from bench's per-request data (None: bench kept none)
    cell["per_request"] = per_request.cell_figures(bench, concurrency)
    if slo:  # --slo: the requests meeting every target, from bench's per-request results
        cell["goodput"] = goodput.figures(bench, slo)
    return cell
