"""The bench tables' rows as typed records, as in report/rows.py (which names them in ROWS): bench_cells (one bench
repeat) and speed / load_speed (per method x task x load). Their latency, stability and drafting-cost columns are
generated in report/tables.py from finite tuples (report/cells.py METRICS and PERCENTILES, drafting_cost.FIELDS):
spelled out here, and tests/report/test_rows.py holds the generated names equal to these fields."""

# no `from __future__ import annotations` here: NotRequired must be seen at run time (__required_keys__)
from typing import Any, NotRequired, TypedDict


class BenchCellRow(TypedDict):
    """A row of the bench_cells table: one bench repeat (report/cells.py). Its latency columns, generated in
    report/tables.py from METRICS x (mean, PERCENTILES) (report/cells.py), are a finite set, spelled out here;
    every row has every one (test_rows.py holds the generated names equal to these fields)."""

    method: str
    task: str
    load: Any
    concurrency: Any
    request_rate: Any
    repeat: Any
    session: Any
    status: Any
    file: Any
    source: Any
    completed: Any
    failed: Any
    total_output_tokens: Any
    duration_s: Any
    output_throughput: Any
    request_throughput: Any
    mean_tpot_ms: Any
    p50_tpot_ms: Any
    p95_tpot_ms: Any
    p99_tpot_ms: Any
    mean_itl_ms: Any
    p50_itl_ms: Any
    p95_itl_ms: Any
    p99_itl_ms: Any
    mean_ttft_ms: Any
    p50_ttft_ms: Any
    p95_ttft_ms: Any
    p99_ttft_ms: Any
    mean_e2el_ms: Any
    p50_e2el_ms: Any
    p95_e2el_ms: Any
    p99_e2el_ms: Any
    spec_decode_acceptance_length: Any
    spec_decode_acceptance_rate: Any
    spec_decode_draft_tokens: Any
    spec_decode_num_drafts: Any
    spec_decode_accepted_tokens: Any
    tokens_per_target_pass: Any
    drafting_share: Any
    preemptions: Any
    per_request_data: Any
    max_send_pause_ms: Any
    send_pauses: Any
    ttft_outliers: Any
    e2el_outliers: Any
    burst_requests: Any
    burst_chunks: Any
    chunks: Any
    stall: Any
    streamed_output_tokens: Any
    stream_chunks: Any
    tokens_per_chunk: Any
    tpot_degenerate: Any
    itl_burst: Any
    degeneracy_rule: Any
    slo: Any
    good_requests: Any
    goodput_share: Any
    request_goodput: Any
    bench_request_goodput: Any


class SpeedRow(TypedDict):
    """A row of the speed table, and of load_speed (the open-loop cells' rows, the same columns): report/speed.py.
    Its percentile, stability and drafting-cost columns, generated in report/tables.py from METRICS x PERCENTILES,
    METRICS x (95, 99) and drafting_cost.FIELDS, are a finite set, spelled out here (test_rows.py holds the
    generated names equal to these fields); report/speed.py writes the first two, and the mean and p95 ratios,
    under computed names (speed._by_name). Every row has every column but no_batching_gain and slow_c1, which
    only closed-loop rows have (an open-loop row leaves them out, as before: pandas writes them empty)."""

    method: str
    label: Any
    baseline: Any
    task: str
    load: Any
    concurrency: Any
    request_rate: Any
    role: Any
    comparable: Any
    server_contradicted: Any
    repeats: Any
    baseline_repeats: Any
    design: Any
    cells_failed: Any
    output_throughput: Any
    baseline_output_throughput: Any
    request_throughput: Any
    e2el_mean_ms: Any
    tokens_per_request: Any
    tpot_p50_ms: Any
    tpot_p95_ms: Any
    tpot_p99_ms: Any
    itl_p50_ms: Any
    itl_p95_ms: Any
    itl_p99_ms: Any
    ttft_p50_ms: Any
    ttft_p95_ms: Any
    ttft_p99_ms: Any
    e2el_p50_ms: Any
    e2el_p95_ms: Any
    e2el_p99_ms: Any
    baseline_tpot_p50_ms: Any
    requests_per_repeat: Any
    itl_samples_per_repeat_est: Any
    tpot_p95_unstable: Any
    tpot_p99_unstable: Any
    itl_p95_unstable: Any
    itl_p99_unstable: Any
    ttft_p95_unstable: Any
    ttft_p99_unstable: Any
    e2el_p95_unstable: Any
    e2el_p99_unstable: Any
    bench_acceptance_length: Any
    bench_acceptance_rate: Any
    tpot_speedup: Any
    tpot_speedup_low: Any
    tpot_speedup_high: Any
    tpot_verdict: Any
    throughput_speedup: Any
    throughput_speedup_low: Any
    throughput_speedup_high: Any
    throughput_verdict: Any
    e2el_speedup: Any
    e2el_speedup_low: Any
    e2el_speedup_high: Any
    tpot_mean_speedup: Any
    tpot_p95_speedup: Any
    e2el_mean_speedup: Any
    e2el_p95_speedup: Any
    tpot_degenerate: Any
    tpot_degenerate_method: Any
    tpot_degenerate_baseline: Any
    tpot_burst_method: Any
    tpot_burst_baseline: Any
    latency_basis: Any
    latency_statistic: Any
    latency_speedup: Any
    latency_speedup_low: Any
    latency_speedup_high: Any
    latency_mean_speedup: Any
    latency_p95_speedup: Any
    tail_disagrees: Any
    stall: Any
    stalled: Any
    no_batching_gain: NotRequired[Any]  # closed-loop rows only (speed): a load_speed row has none
    beyond_bound: Any
    slow_c1: NotRequired[Any]  # closed-loop rows only (speed): a load_speed row has none
    verdict: Any
    stability: Any
    tpot_spread: Any
    baseline_tpot_spread: Any
    host_load_per_core: Any
    baseline_host_load_per_core: Any
    other_cpu_s: Any
    other_cpu_share: Any
    baseline_other_cpu_share: Any
    bench_cpu_share: Any
    baseline_bench_cpu_share: Any
    host_busy: Any
    client_bound: Any
    itl_degenerate: Any
    tokens_per_chunk: Any
    itl_per_chunk: Any
    itl_p50_per_token_ms: Any
    tokens_per_target_pass: Any
    drafting_share: Any
    efficiency: Any
    efficiency_verify_steps: Any
    preemptions: Any
    failed_requests: Any
    kv_cache_tokens: Any
    kv_cache_loss: Any
    note: Any
    free_drafting_tpot_ms: Any
    pass_ms: Any
    drafting_cost_ms_per_pass: Any
    drafting_cost_share: Any
