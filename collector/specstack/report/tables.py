"""The report's tidy tables (report/tables/*.csv|parquet): fixed columns per table, so an empty table still has
its header and a new column cannot appear without being declared here."""
from __future__ import annotations

import io

import pandas as pd

from specstack.report.cells import METRICS, PERCENTILES
from specstack.report.drafting_cost import FIELDS as DRAFTING_COST_FIELDS
from specstack.report.guards import COLUMNS as GUARD_COLUMNS
from specstack.report.loops import COLUMNS as LOOP_COLUMNS
from specstack.report.start_costs import COLUMNS as START_COLUMNS
from specstack.report.time_breakdown import COLUMNS as TIME_COLUMNS

_PCT_COLS = [f"{m}_p{p}_ms" for m in METRICS for p in PERCENTILES]
_UNSTABLE_COLS = [f"{m}_p{p}_unstable" for m in METRICS for p in (95, 99)]
# Fixed columns per tidy table, so an empty table still has its header (and the schema cannot drift silently).
COLUMNS: dict[str, list[str]] = {
    "methods": ["method", "label", "status", "baseline", "comparable", "server_contradicted",
                "server_contradictions", "k", "speculative_config", "spec_override",
                "target",
                "model_runner", "model_runner_basis", "async_scheduling", "async_scheduling_basis",
                "kv_cache_tokens", "kv_cache_loss", "crosscheck_ok", "crosscheck_kinds", "prometheus_view", "error",
                "folder"],
    "bench_cells": ["method", "task", "load", "concurrency", "request_rate", "repeat", "session", "status", "file", "source", "completed", "failed",
                    "total_output_tokens", "duration_s", "output_throughput", "request_throughput",
                    *[f"{k}_{m}_ms" for m in METRICS for k in ("mean", *(f"p{p}" for p in PERCENTILES))],
                    "spec_decode_acceptance_length", "spec_decode_acceptance_rate", "spec_decode_draft_tokens",
                    "spec_decode_num_drafts", "spec_decode_accepted_tokens", "tokens_per_target_pass",
                    "drafting_share", "preemptions", "per_request_data", "max_send_pause_ms", "send_pauses",
                    "ttft_outliers", "e2el_outliers", "burst_requests", "burst_chunks", "chunks", "stall",
                    "streamed_output_tokens", "stream_chunks", "tokens_per_chunk",
                    "tpot_degenerate", "itl_burst", "degeneracy_rule", "slo", "good_requests", "goodput_share",
                    "request_goodput", "bench_request_goodput"],
    "speed": ["method", "label", "baseline", "task", "load", "concurrency", "request_rate", "role", "comparable",
              "server_contradicted",
              "repeats",
              "baseline_repeats",
              "design",
              "cells_failed", "output_throughput", "baseline_output_throughput", "request_throughput",
              "e2el_mean_ms", "tokens_per_request", *_PCT_COLS, "baseline_tpot_p50_ms",
              "requests_per_repeat", "itl_samples_per_repeat_est", *_UNSTABLE_COLS, "bench_acceptance_length",
              "bench_acceptance_rate", "tpot_speedup", "tpot_speedup_low", "tpot_speedup_high", "tpot_verdict",
              "throughput_speedup", "throughput_speedup_low", "throughput_speedup_high", "throughput_verdict",
              "e2el_speedup", "e2el_speedup_low", "e2el_speedup_high", "tpot_mean_speedup", "tpot_p95_speedup",
              "e2el_mean_speedup", "e2el_p95_speedup", "tpot_degenerate", "tpot_degenerate_method",
              "tpot_degenerate_baseline", "tpot_burst_method", "tpot_burst_baseline", "latency_basis", "latency_statistic",
              "latency_speedup", "latency_speedup_low", "latency_speedup_high", "latency_mean_speedup",
              "latency_p95_speedup", "tail_disagrees", "stall", "stalled", "no_batching_gain", "beyond_bound", "slow_c1", "verdict", "stability",
              "tpot_spread", "baseline_tpot_spread", "host_load_per_core", "baseline_host_load_per_core",
              "other_cpu_s", "other_cpu_share", "baseline_other_cpu_share", "bench_cpu_share",
              "baseline_bench_cpu_share", "host_busy", "client_bound", "itl_degenerate",
              "tokens_per_chunk", "itl_per_chunk", "itl_p50_per_token_ms",
              "tokens_per_target_pass", "drafting_share", "efficiency", "efficiency_verify_steps", "preemptions",
              "failed_requests", "kv_cache_tokens", "kv_cache_loss", "note",
              *DRAFTING_COST_FIELDS],
    "crossover": ["method", "label", "baseline", "task", "comparable", "server_contradicted", "tpot_kind",
                  "tpot_crossover_concurrency",
                  "tpot_text", "latency_basis",
                  "throughput_kind", "throughput_crossover_concurrency", "throughput_text", "stalled_concurrencies"],
    "acceptance": ["method", "label", "baseline", "task", "target", "k", "comparable", "server_contradicted",
                   "acceptance_rate",
                   "mean_acceptance_length",
                   "no_accept_share", "num_spec_steps", "num_draft_tokens", "num_accepted_draft_tokens", "histogram",
                   "per_position", "per_position_conditional", "requests", "distinct_outputs", "completion_tokens",
                   "failed_requests",
                   "accepted_past_end", "finish_reasons"],
    "acceptance_sampled": ["method", "label", "task", "temperature", "status", "k", "acceptance_rate",
                           "mean_acceptance_length", "greedy_acceptance_rate", "greedy_mean_acceptance_length",
                           "no_accept_share", "num_spec_steps", "num_draft_tokens", "num_accepted_draft_tokens",
                           "histogram"],
    "acceptance_by_category": ["method", "label", "task", "phase", "temperature", "category", "k", "requests",
                               "acceptance_rate", "mean_acceptance_length", "no_accept_share", "num_spec_steps",
                               "num_draft_tokens", "num_accepted_draft_tokens", "histogram", "per_position",
                               "per_position_conditional"],
    "acceptance_by_turn": ["method", "label", "task", "turn", "k", "status", "requests", "left_out",
                           "acceptance_rate", "mean_acceptance_length", "no_accept_share", "num_spec_steps",
                           "num_draft_tokens", "num_accepted_draft_tokens", "histogram", "completion_tokens",
                           "answers_from", "input_sha256"],
    "lossless": ["method", "label", "baseline", "task", "temperature", "samples_per_prompt", "positions", "tests",
                 "flagged", "min_p_holm", "alpha", "detectable_tv", "engine_sampler", "verdict"],
    "prefix_cache": ["method", "label", "task", "phase", "concurrency", "temperature", "caching", "queries", "hits",
                     "hit_rate"],
    "acceptance_positions": ["method", "task", "position", "rate", "conditional_rate", "drafted_steps"],
    "acceptance_histogram": ["method", "task", "accepted", "steps", "share"],
    "equality_requests": ["method", "baseline", "task", "id", "equal", "first_token_divergence",
                          "first_char_divergence", "unit", "finish_reason", "baseline_finish_reason",
                          "completion_tokens", "baseline_completion_tokens", "divergence_gap_nats",
                          "divergence_kind", "note", "divergence_cause"],
    "equality_summary": ["method", "label", "baseline", "task", "comparable", "server_contradicted", "requests",
                         "distinct_outputs", "baseline_distinct_outputs", "compared", "equal",
                         "equal_rate",
                         "finish_reason_differs", "first_divergence_min", "first_divergence_median", "near_ties",
                         "unit", "tokenizer", "dtype", "note"],
    "load_crossover": ["method", "label", "baseline", "task", "latency_kind", "latency_crossover_rate", "latency_text",
                       "throughput_kind", "throughput_crossover_rate", "throughput_text"],
    "frontier": ["method", "label", "baseline", "task", "role", "load", "offered", "concurrency", "request_rate",
                 "repeats", "system_tok_s", "per_user_tok_s", "per_user_basis", "ttft_p50_ms", "served_req_s",
                 "mean_in_flight", "flags", "on_frontier", "baseline_system_at_equal_per_user",
                 "system_at_equal_per_user"],
    "capacity": ["method", "label", "baseline", "task", "share", "slo", "kind", "capacity_req_s", "fails_at_req_s",
                 "resolution", "probes", "rates_from", "text", "capacity_speedup", "capacity_speedup_low",
                 "capacity_speedup_high"],
    "ksweep": ["family", "task", "concurrency", "k", "method", "tpot_p50_ms", "baseline_tpot_p50_ms", "tpot_speedup",
               "output_throughput", "bench_acceptance_length", "acceptance_phase_mean_length", "spec_override",
               "gain_stops_at_k", "gain_note"],
    "k_per_load": ["family", "task", "concurrency", "band", "k", "ties", "why_no_k", "median_tok_s", "speedup",
                   "relative_mad", "candidates", "schedule", "schedule_verdict", "best_fixed_k",
                   "best_fixed_k_speedup", "schedule_method", "schedule_ran", "schedule_tok_s", "schedule_speedup"],
    # figures summary.json stated otherwise than its sums and request records give (report/findings.py)
    "summary_findings": ["method", "task", "phase", "figure", "summary_json", "recomputed", "from", "check"],
}

COLUMNS["repetition_loops"] = LOOP_COLUMNS
COLUMNS["prompt_guards"] = GUARD_COLUMNS
COLUMNS["time_breakdown"] = TIME_COLUMNS
COLUMNS["start_costs"] = START_COLUMNS
COLUMNS["load_speed"] = COLUMNS["speed"]   # the open-loop cells' speed rows (report/load.py): the same figures


def table_bytes(name: str, rows: list[dict]) -> tuple[bytes, bytes]:
    columns = COLUMNS[name]
    extra = {k for r in rows for k in r} - set(columns)
    if extra:
        raise AssertionError(f"table {name}: columns {sorted(extra)} missing from report.tables.COLUMNS")
    df = pd.DataFrame(rows, columns=columns)
    buf = io.BytesIO()
    df.to_parquet(buf, index=False)
    return df.to_csv(index=False).encode("utf-8"), buf.getvalue()
