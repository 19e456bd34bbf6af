"""What one report holds: every row of every figure (computed by the row modules), the plots and their captions.
The sections, the plots and the tables read it; build.py fills it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from specstack.report.rows import (
    AcceptanceRow,
    BenchCellRow,
    CapacityRow,
    CategoryRow,
    CrossoverRow,
    EqualityRequestRow,
    EqualitySummaryRow,
    FrontierRow,
    GuardRow,
    HistogramRow,
    KPerLoadRow,
    KSweepRow,
    LoadCrossoverRow,
    LoopRow,
    LosslessRow,
    MethodRow,
    PositionRow,
    PrefixCacheRow,
    SampledRow,
    SpeedRow,
    StartCostRow,
    TimeBreakdownRow,
    TurnRow,
)
from specstack.results.reader import RunData


@dataclass
class Report:
    run: RunData
    methods: list[MethodRow]
    cells: list[BenchCellRow]
    speed: list[SpeedRow]
    crossover: list[CrossoverRow]
    acceptance: list[AcceptanceRow]
    positions: list[PositionRow]
    histogram: list[HistogramRow]
    equality: list[EqualityRequestRow]
    equality_summary: list[EqualitySummaryRow]
    ksweep: list[KSweepRow]
    sampled: list[SampledRow] = field(default_factory=list)  # acceptance per temperature (--temperatures)
    lossless: list[LosslessRow] = field(default_factory=list)  # sampled outputs vs the baseline's (report/lossless.py)
    categories: list[CategoryRow] = field(default_factory=list)  # acceptance per dataset category (greedy and sampled)
    prefix_cache: list[PrefixCacheRow] = field(
        default_factory=list
    )  # hit rate per method × task × phase (--prefix-caching)
    turns: list[TurnRow] = field(default_factory=list)  # acceptance per turn (--turns 2)
    k_per_load: list[KPerLoadRow] = field(
        default_factory=list
    )  # the best K per concurrency band (figures/k_per_load.py)
    rates: list[SpeedRow] = field(default_factory=list)  # speed rows of the open-loop cells (--rates, report/load.py)
    rate_crossover: list[LoadCrossoverRow] = field(default_factory=list)
    frontier: list[FrontierRow] = field(default_factory=list)  # per-user vs system speed, every cell
    capacity: list[CapacityRow] = field(default_factory=list)  # highest rate meeting the SLO (--capacity)
    summary_findings: list[dict[str, Any]] = field(
        default_factory=list
    )  # summary.json against its records (report/findings.py)
    loops: list[LoopRow] = field(default_factory=list)  # repetition loops per method × task (report/loops.py)
    guards: list[GuardRow] = field(default_factory=list)  # doubled BOS, random prompts per method × task (guards.py)
    time_breakdown: list[TimeBreakdownRow] = field(
        default_factory=list
    )  # where each method's time went (time_breakdown.py)
    start_costs: list[StartCostRow] = field(default_factory=list)  # what speculation costs at start-up (start_costs.py)
    plots: dict[str, bytes] = field(default_factory=dict)  # report/<name>.png -> bytes
    plot_captions: dict[str, str] = field(default_factory=dict)

    def tables(self) -> dict[str, Sequence[Mapping[str, Any]]]:
        return {
            "methods": self.methods,
            "bench_cells": self.cells,
            "speed": self.speed,
            "crossover": self.crossover,
            "acceptance": self.acceptance,
            "acceptance_positions": self.positions,
            "acceptance_histogram": self.histogram,
            "equality_requests": self.equality,
            "equality_summary": self.equality_summary,
            "ksweep": self.ksweep,
            "acceptance_sampled": self.sampled,
            "lossless": self.lossless,
            "acceptance_by_category": self.categories,
            "prefix_cache": self.prefix_cache,
            "acceptance_by_turn": self.turns,
            "k_per_load": self.k_per_load,
            "load_speed": self.rates,
            "load_crossover": self.rate_crossover,
            "frontier": self.frontier,
            "capacity": self.capacity,
            "summary_findings": self.summary_findings,
            "repetition_loops": self.loops,
            "prompt_guards": self.guards,
            "time_breakdown": self.time_breakdown,
            "start_costs": self.start_costs,
        }
