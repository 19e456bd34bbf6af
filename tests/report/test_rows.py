"""The typed rows (report/rows.py) and the tidy tables' columns (report/tables.py COLUMNS) say the same: each row
type's fields are its table's columns, in order, so a column added to one and not the other fails here."""

from __future__ import annotations

import dataclasses
import typing

import pytest

from specstack.figures.equality import TextComparison
from specstack.report import cells, contents, drafting_cost, rows, start_costs, tables, time_breakdown

pytestmark = pytest.mark.unit


# the columns a row of the table may leave out (NotRequired): a speed row's two closed-loop marks (report/speed.py)
OPTIONAL = {"speed": {"no_batching_gain", "slow_c1"}, "load_speed": {"no_batching_gain", "slow_c1"}}


@pytest.mark.parametrize("table", sorted(rows.ROWS))
def test_each_row_type_has_its_tables_columns_in_order(table: str) -> None:
    assert list(rows.ROWS[table].__annotations__) == tables.COLUMNS[table]
    required = frozenset(tables.COLUMNS[table]) - OPTIONAL.get(table, set())
    assert rows.ROWS[table].__required_keys__ == required  # type: ignore[attr-defined]


def test_every_row_type_is_named_in_rows() -> None:
    declared = {v for v in vars(rows).values() if typing.is_typeddict(v)} - {rows.WindowFigures}
    assert declared == set(rows.ROWS.values())
    assert set(rows.ROWS) <= set(tables.COLUMNS)


def test_window_figures_are_columns_of_every_acceptance_table() -> None:
    """The cells of the acceptance sections read these from any of the four tables' rows."""
    for table in ("acceptance", "acceptance_sampled", "acceptance_by_category", "acceptance_by_turn"):
        assert set(rows.WindowFigures.__annotations__) <= set(tables.COLUMNS[table]), table


def test_every_latency_column_of_a_bench_cell_is_declared() -> None:
    """bench_cells' latency columns are named from METRICS and PERCENTILES (report/cells.py), a finite set: each is
    a field of BenchCellRow, and a required one (every row has every one)."""
    generated = [f"{k}_{m}_ms" for m in cells.METRICS for k in ("mean", *(f"p{p}" for p in cells.PERCENTILES))]
    assert set(generated) <= rows.BenchCellRow.__required_keys__  # type: ignore[attr-defined]
    assert [c for c in rows.BenchCellRow.__annotations__ if c.endswith("_ms") and c.split("_")[1] in cells.METRICS] == (
        generated
    )


def test_every_column_a_speed_row_names_at_run_time_is_declared() -> None:
    """report/speed.py writes these under f-string names (speed._by_name), which mypy cannot check: each is a
    required field of SpeedRow."""
    generated = [
        *[f"{m}_p{p}_ms" for m in cells.METRICS for p in cells.PERCENTILES],
        *[f"{m}_p{p}_unstable" for m in cells.METRICS for p in (95, 99)],
        *[f"{m}_{stat}_speedup" for m in ("tpot", "e2el") for stat in ("mean", "p95")],
        *drafting_cost.FIELDS,
    ]
    assert set(generated) <= rows.SpeedRow.__required_keys__  # type: ignore[attr-defined]
    assert rows.ROWS["speed"] is rows.ROWS["load_speed"] is rows.SpeedRow


def test_an_equality_request_row_holds_what_compare_texts_says() -> None:
    """equality_requests' rows take compare_texts' three figures under its names, with its types."""
    hints, row = typing.get_type_hints(TextComparison), typing.get_type_hints(rows.EqualityRequestRow)
    assert all(row[k] == v | None for k, v in hints.items()), (hints, row)


def test_the_reports_fields_hold_the_row_types_of_their_tables() -> None:
    """Report.tables() reads each table from a field: a typed table's field is a list of its row type."""
    lists = {f.name: [] for f in dataclasses.fields(contents.Report) if f.name != "run"}
    lists = {k: v for k, v in lists.items() if k not in ("plots", "plot_captions")}
    rep = contents.Report(run=None, **lists)  # type: ignore[arg-type]
    field_of = {table: next(k for k, v in lists.items() if v is got) for table, got in rep.tables().items()}
    hints = typing.get_type_hints(contents.Report)
    for table, row in rows.ROWS.items():
        assert hints[field_of[table]] == list[row], table  # type: ignore[valid-type]


def test_the_columns_generated_from_tuples_are_the_row_types_fields() -> None:
    """time_breakdown's columns are generated from STARTUP and PHASES, start_costs' from FIGURES; their row types
    spell each out, so a phase or figure added to a tuple fails here until its row type has it (and mypy then
    until the row is built with it)."""
    assert list(rows.TimeBreakdownRow.__annotations__) == time_breakdown.COLUMNS
    assert list(rows.StartCostRow.__annotations__) == start_costs.COLUMNS
    assert tables.COLUMNS["time_breakdown"] is time_breakdown.COLUMNS
    assert tables.COLUMNS["start_costs"] is start_costs.COLUMNS
