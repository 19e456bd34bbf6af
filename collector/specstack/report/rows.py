"""The report's table rows as typed records: one TypedDict per tidy table whose fields are that table's columns
(report/tables.py COLUMNS), in its order; tests/report/test_rows.py holds the two equal, so neither can drift.
A row is a dict at run time (pandas, CSV, JSON read it as before); mypy catches a misspelled or missing column where
a row is built or read. Values are typed `Any` but the keys every table has (method, task: text) and those a typed
figure fills (equality_requests' comparison, figures/equality.py TextComparison).
One table is not typed here and builds `dict[str, Any]` rows: summary_findings, which is open-ended on purpose:
compare.json's rows of it add `side` and the raw values (report/findings.py rows). bench_cells' and speed's
row types live in report/rows_bench.py."""

from __future__ import annotations

from typing import Any, TypedDict

# the bench tables' rows, declared beside (their generated columns make them long); named here too, so every row
# type is found in report/rows.py
from specstack.report.rows_bench import BenchCellRow as BenchCellRow
from specstack.report.rows_bench import SpeedRow as SpeedRow


class CrossoverRow(TypedDict):
    """A row of the crossover table."""

    method: str
    label: Any
    baseline: Any
    task: str
    comparable: Any
    server_contradicted: Any
    tpot_kind: Any
    tpot_crossover_concurrency: Any
    tpot_text: Any
    latency_basis: Any
    throughput_kind: Any
    throughput_crossover_concurrency: Any
    throughput_text: Any
    stalled_concurrencies: Any


class LoadCrossoverRow(TypedDict):
    """A row of the load_crossover table."""

    method: str
    label: Any
    baseline: Any
    task: str
    latency_kind: Any
    latency_crossover_rate: Any
    latency_text: Any
    throughput_kind: Any
    throughput_crossover_rate: Any
    throughput_text: Any


class PositionRow(TypedDict):
    """A row of the acceptance_positions table."""

    method: str
    task: str
    position: Any
    rate: Any
    conditional_rate: Any
    drafted_steps: Any


class HistogramRow(TypedDict):
    """A row of the acceptance_histogram table."""

    method: str
    task: str
    accepted: Any
    steps: Any
    share: Any


class EqualitySummaryRow(TypedDict):
    """A row of the equality_summary table."""

    method: str
    label: Any
    baseline: Any
    task: str
    comparable: Any
    server_contradicted: Any
    requests: Any
    distinct_outputs: Any
    baseline_distinct_outputs: Any
    compared: Any
    equal: Any
    equal_rate: Any
    finish_reason_differs: Any
    first_divergence_min: Any
    first_divergence_median: Any
    near_ties: Any
    unit: Any
    tokenizer: Any
    dtype: Any
    note: Any


class LoopRow(TypedDict):
    """A row of the repetition_loops table."""

    method: str
    label: Any
    task: str
    comparable: Any
    server_contradicted: Any
    requests: Any
    loops: Any
    unknown: Any
    loop_ids: Any
    acceptance_rate: Any
    mean_acceptance_length: Any
    requests_without_loops: Any
    acceptance_rate_without_loops: Any
    mean_acceptance_length_without_loops: Any
    num_draft_tokens_without_loops: Any
    num_accepted_draft_tokens_without_loops: Any
    num_spec_steps_without_loops: Any


class GuardRow(TypedDict):
    """A row of the prompt_guards table."""

    method: str
    label: Any
    task: str
    requests: Any
    prompts_with_ids: Any
    doubled_bos: Any
    bos_id: Any
    bos_basis: Any
    bos_in_text: Any
    random_prompts: Any
    random_basis: Any
    common_word_share: Any
    words: Any


class AcceptanceRow(TypedDict):
    """A row of the acceptance table."""

    method: str
    label: Any
    baseline: Any
    task: str
    target: Any
    k: Any
    comparable: Any
    server_contradicted: Any
    acceptance_rate: Any
    mean_acceptance_length: Any
    no_accept_share: Any
    num_spec_steps: Any
    num_draft_tokens: Any
    num_accepted_draft_tokens: Any
    histogram: Any
    per_position: Any
    per_position_conditional: Any
    requests: Any
    distinct_outputs: Any
    completion_tokens: Any
    failed_requests: Any
    accepted_past_end: Any
    finish_reasons: Any


class SampledRow(TypedDict):
    """A row of the acceptance_sampled table."""

    method: str
    label: Any
    task: str
    temperature: Any
    status: Any
    k: Any
    acceptance_rate: Any
    mean_acceptance_length: Any
    greedy_acceptance_rate: Any
    greedy_mean_acceptance_length: Any
    no_accept_share: Any
    num_spec_steps: Any
    num_draft_tokens: Any
    num_accepted_draft_tokens: Any
    histogram: Any


class CategoryRow(TypedDict):
    """A row of the acceptance_by_category table."""

    method: str
    label: Any
    task: str
    phase: Any
    temperature: Any
    category: Any
    k: Any
    requests: Any
    acceptance_rate: Any
    mean_acceptance_length: Any
    no_accept_share: Any
    num_spec_steps: Any
    num_draft_tokens: Any
    num_accepted_draft_tokens: Any
    histogram: Any
    per_position: Any
    per_position_conditional: Any


class TurnRow(TypedDict):
    """A row of the acceptance_by_turn table."""

    method: str
    label: Any
    task: str
    turn: Any
    k: Any
    status: Any
    requests: Any
    left_out: Any
    acceptance_rate: Any
    mean_acceptance_length: Any
    no_accept_share: Any
    num_spec_steps: Any
    num_draft_tokens: Any
    num_accepted_draft_tokens: Any
    histogram: Any
    completion_tokens: Any
    answers_from: Any
    input_sha256: Any


class LosslessRow(TypedDict):
    """A row of the lossless table."""

    method: str
    label: Any
    baseline: Any
    task: str
    temperature: Any
    samples_per_prompt: Any
    positions: Any
    tests: Any
    flagged: Any
    min_p_holm: Any
    alpha: Any
    detectable_tv: Any
    engine_sampler: Any
    verdict: Any


class CapacityRow(TypedDict):
    """A row of the capacity table."""

    method: str
    label: Any
    baseline: Any
    task: str
    share: Any
    slo: Any
    kind: Any
    capacity_req_s: Any
    fails_at_req_s: Any
    resolution: Any
    probes: Any
    rates_from: Any
    text: Any
    capacity_speedup: Any
    capacity_speedup_low: Any
    capacity_speedup_high: Any


class MethodRow(TypedDict):
    """A row of the methods table."""

    method: str
    label: Any
    status: Any
    baseline: Any
    comparable: Any
    server_contradicted: Any
    server_contradictions: Any
    k: Any
    speculative_config: Any
    spec_override: Any
    target: Any
    model_runner: Any
    model_runner_basis: Any
    async_scheduling: Any
    async_scheduling_basis: Any
    kv_cache_tokens: Any
    kv_cache_loss: Any
    crosscheck_ok: Any
    crosscheck_kinds: Any
    prometheus_view: Any
    error: Any
    folder: Any


class PrefixCacheRow(TypedDict):
    """A row of the prefix_cache table."""

    method: str
    label: Any
    task: str
    phase: Any
    concurrency: Any
    temperature: Any
    caching: Any
    queries: Any
    hits: Any
    hit_rate: Any


class KSweepRow(TypedDict):
    """A row of the ksweep table."""

    family: Any
    task: str
    concurrency: Any
    k: Any
    method: str
    tpot_p50_ms: Any
    baseline_tpot_p50_ms: Any
    tpot_speedup: Any
    output_throughput: Any
    bench_acceptance_length: Any
    acceptance_phase_mean_length: Any
    spec_override: Any
    gain_stops_at_k: Any
    gain_note: Any


class KPerLoadRow(TypedDict):
    """A row of the k_per_load table."""

    family: Any
    task: str
    concurrency: Any
    band: Any
    k: Any
    ties: Any
    why_no_k: Any
    median_tok_s: Any
    speedup: Any
    relative_mad: Any
    candidates: Any
    schedule: Any
    schedule_verdict: Any
    best_fixed_k: Any
    best_fixed_k_speedup: Any
    schedule_method: Any
    schedule_ran: Any
    schedule_tok_s: Any
    schedule_speedup: Any


class FrontierRow(TypedDict):
    """A row of the frontier table."""

    method: str
    label: Any
    baseline: Any
    task: str
    role: Any
    load: Any
    offered: Any
    concurrency: Any
    request_rate: Any
    repeats: Any
    system_tok_s: Any
    per_user_tok_s: Any
    per_user_basis: Any
    ttft_p50_ms: Any
    served_req_s: Any
    mean_in_flight: Any
    flags: Any
    on_frontier: Any
    baseline_system_at_equal_per_user: Any
    system_at_equal_per_user: Any


class EqualityRequestRow(TypedDict):
    """A row of the equality_requests table (equal and the two divergences: figures/equality.py compare_texts)."""

    method: str
    baseline: Any
    task: str
    id: Any
    equal: bool | None  # None: not compared (see note)
    first_token_divergence: int | None
    first_char_divergence: int | None
    unit: Any
    finish_reason: Any
    baseline_finish_reason: Any
    completion_tokens: Any
    baseline_completion_tokens: Any
    divergence_gap_nats: Any
    divergence_kind: Any
    note: Any
    divergence_cause: Any


class TimeBreakdownRow(TypedDict):
    """A row of the time_breakdown table; report/time_breakdown.py generates its columns from STARTUP and PHASES,
    spelled out here (tests/report/test_rows.py holds the two equal)."""

    method: str
    label: Any
    total_s: Any
    checks_s: Any
    server_start_s: Any
    startup_held_s: Any
    startup_process_s: Any
    startup_to_engine_s: Any
    startup_load_s: Any
    startup_compile_s: Any
    startup_warmup_s: Any
    startup_jit_kernel_warmup_s: Any
    startup_graph_capture_s: Any
    warmup_windows_s: Any
    acceptance_windows_s: Any
    sampled_windows_s: Any
    bench_windows_s: Any
    windows_s: Any
    harness_s: Any
    harness_share: Any


class StartCostRow(TypedDict):
    """A row of the start_costs table; report/start_costs.py generates its columns from FIGURES (each figure, then
    the baseline's), spelled out here (tests/report/test_rows.py holds the two equal)."""

    method: str
    label: Any
    baseline: Any
    compile_cache: Any
    ready_s: Any
    baseline_ready_s: Any
    weights_gib: Any
    baseline_weights_gib: Any
    cuda_graph_gib: Any
    baseline_cuda_graph_gib: Any
    kv_cache_gib: Any
    baseline_kv_cache_gib: Any
    kv_cache_tokens: Any
    baseline_kv_cache_tokens: Any
    kv_cache_loss: Any


class WindowFigures(TypedDict):
    """Not a table: the acceptance window's columns that the acceptance, sampled, category and turn rows share
    (report/acceptance.py _window_figures), spread into the category and turn rows."""

    acceptance_rate: Any
    mean_acceptance_length: Any
    no_accept_share: Any
    num_spec_steps: Any
    num_draft_tokens: Any
    num_accepted_draft_tokens: Any
    histogram: Any


# table name (COLUMNS) -> its row type
ROWS: dict[str, type] = {
    "crossover": CrossoverRow,
    "load_crossover": LoadCrossoverRow,
    "acceptance_positions": PositionRow,
    "acceptance_histogram": HistogramRow,
    "equality_summary": EqualitySummaryRow,
    "repetition_loops": LoopRow,
    "prompt_guards": GuardRow,
    "acceptance": AcceptanceRow,
    "acceptance_sampled": SampledRow,
    "acceptance_by_category": CategoryRow,
    "acceptance_by_turn": TurnRow,
    "lossless": LosslessRow,
    "capacity": CapacityRow,
    "methods": MethodRow,
    "prefix_cache": PrefixCacheRow,
    "ksweep": KSweepRow,
    "k_per_load": KPerLoadRow,
    "frontier": FrontierRow,
    "equality_requests": EqualityRequestRow,
    "bench_cells": BenchCellRow,
    "speed": SpeedRow,
    "load_speed": SpeedRow,
    "time_breakdown": TimeBreakdownRow,
    "start_costs": StartCostRow,
}
