"""The comparison end to end: a run against itself, the files written, the command's user errors."""

from __future__ import annotations

import json

import pytest

from specstack.cli.main import main
from tests.report.test_report import WordTokenizer

from .common import compare

pytestmark = pytest.mark.unit


def test_a_run_against_itself_changes_nothing_and_exits_0(run_a, tmp_path, capsys):
    cmp = compare(run_a, run_a, "acceptance_length:-2%,throughput:-5%,tpot_p50:+5%", WordTokenizer())
    assert cmp.changed() == [] and not cmp.failed
    rows = cmp.acceptance + cmp.positions + cmp.histogram
    assert rows and all(r["verdict"] == "same" for r in rows)
    assert cmp.speed and all(r["verdict"] == "within noise" for r in cmp.speed)
    assert all(s["verdict"] == "same" for s in cmp.outputs_summary)
    out = tmp_path / "out"
    assert main(["compare", str(run_a), str(run_a), "--out", str(out), "--fail-on", "acceptance_length:-2%"]) == 0
    for name in ("compare.md", "compare.html", "compare.json", "compare_positions_ngram.png"):
        assert (out / name).stat().st_size > 0, name
    doc = json.loads((out / "compare.json").read_text())
    assert doc["changed"] == [] and doc["gate_failed"] is False
    assert "0 figure(s) changed" in (out / "compare.md").read_text()
    assert str(tmp_path) not in (out / "compare.json").read_text()  # no host paths in what is handed on


def test_a_missing_run_folder_is_a_user_error(run_a, tmp_path, capsys):
    assert main(["compare", str(run_a), str(tmp_path / "nope")]) == 2
    assert "no run folder" in capsys.readouterr().err


def test_an_unwritable_out_folder_is_a_user_error(run_a, tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    assert main(["compare", str(run_a), str(run_a), "--out", str(blocker / "sub")]) == 2
    assert "pass --out DIR" in capsys.readouterr().err
