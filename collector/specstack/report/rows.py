"""The report's table rows as typed records: one TypedDict per tidy table whose fields are that table's columns
(report/tables.py COLUMNS), in its order; tests/report/test_rows.py holds the two equal, so neither can drift.
A row is a dict at run time (pandas, CSV, JSON read it as before); mypy catches a misspelled or missing column where
a row is built or read. Values are typed `Any` but the keys every table has (method, task: text).
Tables not typed here still build `dict[str, Any]` rows: see ROWS for which are."""

from __future__ import annotations

from typing import Any, TypedDict


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


# table name (COLUMNS) -> its row type
ROWS: dict[str, type] = {
    "crossover": CrossoverRow,
    "load_crossover": LoadCrossoverRow,
    "acceptance_positions": PositionRow,
    "acceptance_histogram": HistogramRow,
    "equality_summary": EqualitySummaryRow,
    "repetition_loops": LoopRow,
    "prompt_guards": GuardRow,
}
