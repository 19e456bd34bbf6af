"""The typed rows (report/rows.py) and the tidy tables' columns (report/tables.py COLUMNS) say the same: each row
type's fields are its table's columns, in order, so a column added to one and not the other fails here."""

from __future__ import annotations

import typing

import pytest

from specstack.report import contents, rows, tables

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("table", sorted(rows.ROWS))
def test_each_row_type_has_its_tables_columns_in_order(table: str) -> None:
    assert list(rows.ROWS[table].__annotations__) == tables.COLUMNS[table]
    assert rows.ROWS[table].__required_keys__ == frozenset(tables.COLUMNS[table])  # type: ignore[attr-defined]


def test_every_row_type_is_named_in_rows_and_is_a_typed_dict() -> None:
    declared = {v for v in vars(rows).values() if typing.is_typeddict(v)}
    assert declared == set(rows.ROWS.values())
    assert set(rows.ROWS) <= set(tables.COLUMNS)


def test_the_reports_fields_hold_the_row_types_of_their_tables() -> None:
    """Report.tables() maps a table to a field: a typed field's row type is that table's."""
    hints = typing.get_type_hints(contents.Report)
    field_of = {
        "crossover": "crossover",
        "load_crossover": "rate_crossover",
        "acceptance_positions": "positions",
        "acceptance_histogram": "histogram",
        "equality_summary": "equality_summary",
        "repetition_loops": "loops",
        "prompt_guards": "guards",
    }
    assert set(field_of) == set(rows.ROWS)
    for table, name in field_of.items():
        assert hints[name] == list[rows.ROWS[table]]  # type: ignore[valid-type]
