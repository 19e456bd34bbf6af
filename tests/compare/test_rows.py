"""compare/'s typed rows (compare/rows.py) and its declared columns (compare/contents.py COLUMNS) say the same, and
every row a comparison builds, as compare.json writes it, holds its table's columns in that order: each row type's
fields are its table's columns, so a key added to a row and not declared fails here."""

from __future__ import annotations

import json
import shutil
import typing

import pytest

from specstack.compare import build, contents, rows

from .common import compare
from .test_capacity import _with_capacity

pytestmark = pytest.mark.unit

# the columns a row of the table may leave out (NotRequired)
OPTIONAL = {
    "capacity": {"a_rate", "a_bound", "b_rate", "b_bound"},  # a pair searched on one side only
    "outputs_summary": {"first_divergence_median"},  # a pair not compared
}


@pytest.mark.parametrize("table", sorted(rows.ROWS))
def test_each_row_type_has_its_tables_columns_in_order(table: str) -> None:
    assert list(rows.ROWS[table].__annotations__) == contents.COLUMNS[table]
    required = frozenset(contents.COLUMNS[table]) - OPTIONAL.get(table, set())
    assert rows.ROWS[table].__required_keys__ == required  # type: ignore[attr-defined]


def test_every_row_type_is_named_and_every_table_of_the_json_declared(run_a) -> None:
    declared = {v for v in vars(rows).values() if typing.is_typeddict(v)}
    assert declared == set(rows.ROWS.values())
    assert set(rows.ROWS) == set(contents.COLUMNS)
    doc = build.to_json(compare(run_a, run_a, "throughput:+1.5%"))
    tables = {k for k, v in doc.items() if isinstance(v, list) and v and isinstance(v[0], dict)}
    assert tables - {"pairs", "fail_on", "summary_findings"} <= set(contents.COLUMNS)


def test_every_row_a_comparison_builds_holds_its_declared_columns_in_order(run_a, tmp_path) -> None:
    _with_capacity(run_a, "ngram", 2.0, 2.4)
    b = tmp_path / "b"
    shutil.copytree(run_a, b)
    _with_capacity(b, "ngram", 3.0, 3.5)
    plain = tmp_path / "plain"  # capacity searched only in A
    shutil.copytree(run_a, plain)
    path = plain / "ngram" / "summary.json"
    path.write_text(json.dumps({k: v for k, v in json.loads(path.read_text()).items() if k != "load"}))
    seen: dict[str, int] = {}
    for other in (b, plain):
        doc = build.to_json(compare(run_a, other, "acceptance_length:2%,tpot_p99:5%,throughput:+1.5%"))
        for table, columns in contents.COLUMNS.items():
            for row in doc[table]:
                assert list(row) == [c for c in columns if c in row], (table, list(row))
                assert rows.ROWS[table].__required_keys__ <= set(row), (table, list(row))  # type: ignore[attr-defined]
                seen[table] = seen.get(table, 0) + 1
    assert set(seen) == set(contents.COLUMNS), seen  # every table had rows to check
