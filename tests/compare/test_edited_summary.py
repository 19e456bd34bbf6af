"""A hand-edited summary.json in what the reader sees: report.md, the console table, compare.md and the --fail-on
exit status show the recomputed figure flagged and name the edit; a lost figure reads "missing", never "n/a";
compare's table and its gate read one verdict (issue 43, item 4). Real bundles: tests/integration/
test_edited_summary.py."""

from __future__ import annotations

import json
import shutil

import pytest
from rich.console import Console

from specstack.cli.main import main
from specstack.compare import gate
from specstack.report import build, console_table, render, sections
from tests.bundles import make_run
from tests.report.test_report import FixedTokenizers, WordTokenizer

from .common import compare, one

pytestmark = pytest.mark.unit

HIST = [0, 1, 2, 0]  # K=3: 3 steps, 9 drafts, 5 accepted: an acceptance rate of 55.6 %


def _edit(run, task: str, change) -> None:
    path = run / "ngram" / "summary.json"
    s = json.loads(path.read_text())
    change(s["tasks"][task])
    path.write_text(json.dumps(s))


@pytest.fixture
def runs(tmp_path):
    a = make_run(tmp_path, "a", k=3, hist=HIST)
    b = tmp_path / "b"
    shutil.copytree(a, b)
    return a, b


def _report(run) -> str:
    return render.render_markdown(sections.blocks(build.build(run, FixedTokenizers(WordTokenizer()), with_plots=False)))


def _console(run) -> str:
    out = Console(record=True, width=300, color_system=None)
    console_table.print_run(run, out)
    return out.export_text()


def _lines(text: str, start: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(start)]


def test_an_edited_rate_reads_as_its_sums_give_it_everywhere(runs, tmp_path, capsys):
    a, b = runs
    _edit(b, "code", lambda f: f.update(acceptance_rate=0.956))
    md = _report(b)
    [finding] = _lines(md, "| ngram | code | greedy | acceptance_rate |")
    assert "| 95.6 % | 55.6 % | records |" in finding
    [row] = [x for x in _lines(md, "| ngram | 3 |") if "55.6 % ⚑" in x]  # the code acceptance row
    assert "95.6" not in row
    text = _console(b)
    assert "55.6 % ⚑" in text and "ngram · code · greedy: acceptance_rate: summary.json says 95.6 %" in text
    # compare: the table and the gate agree (before: "same" and "0 figure(s) changed", gate exit 1)
    out = tmp_path / "cmp"
    assert main(["compare", str(a), str(b), "--out", str(out), "--fail-on", "acceptance_rate:+1%"]) == 0
    assert "B: ngram · code · greedy: acceptance_rate: summary.json says 95.6 %" in capsys.readouterr().err
    cmd = (out / "compare.md").read_text()
    assert "**0 figure(s) changed**" in cmd and "⚑ summary.json disagrees" in cmd
    [rate] = _lines(cmd, "| ngram | code | acceptance_rate |")
    assert "| 55.6 % | 55.6 % ⚑ |" in rate and rate.endswith("| same |")
    doc = json.loads((out / "compare.json").read_text())
    [finding] = doc["summary_findings"]
    assert (
        finding["side"],
        finding["method"],
        finding["task"],
        finding["figure"],
        finding["summary_json"],
        finding["recomputed"],
    ) == ("B", "ngram", "code", "acceptance_rate", "95.6 %", "55.6 %")
    assert finding["summary_json_value"] == 0.956 and finding["recomputed_value"] == pytest.approx(5 / 9)


def test_a_deleted_figure_is_recomputed_and_one_beyond_it_reads_missing_never_na(runs, tmp_path, capsys):
    a, b = runs
    _edit(b, "code", lambda f: f.pop("acceptance_rate"))
    assert [x for x in _lines(_report(b), "| ngram | 3 |") if "55.6 % ⚑" in x]
    # the rate and the sum it rests on gone, and the records: nothing can give it back
    (b / "ngram" / "acceptance" / "code.jsonl").unlink()
    _edit(b, "code", lambda f: f.pop("num_accepted_draft_tokens"))
    md = _report(b)
    assert [x for x in _lines(md, "| ngram | 3 |") if "missing ⚑" in x and "n/a" not in x.split("|")[3]]
    assert "missing (cannot be recomputed)" in _lines(md, "| ngram | code | greedy | acceptance_rate |")[0]
    code_row = next(x for x in _console(b).splitlines() if x.startswith("│ ngram ") and "missing ⚑" in x)
    assert "n/a" not in code_row.split("│")[3]  # the acceptance cell
    out = tmp_path / "cmp"
    assert main(["compare", str(a), str(b), "--out", str(out), "--fail-on", "acceptance_rate:-1%"]) == 1
    assert "missing in B's summary.json" in capsys.readouterr().out
    [rate] = _lines((out / "compare.md").read_text(), "| ngram | code | acceptance_rate |")
    assert rate.split("|")[5].strip() == "missing ⚑" and "missing in B's summary.json" in rate  # B's cell


def test_edited_sums_are_named_against_the_records(runs):
    a, b = runs
    _edit(b, "chat", lambda f: f.update(num_accepted_draft_tokens=8, acceptance_rate=8 / 9))
    md = _report(b)
    assert "| 8 | 5 | records |" in _lines(md, "| ngram | chat | greedy | num_accepted_draft_tokens |")[0]
    cmp = compare(a, b, "acceptance_rate:+1%")
    assert cmp.changed() == [] and not cmp.failed
    assert one(cmp.acceptance, task="chat", figure="acceptance_rate")["flagged"] == "B"


def test_the_gate_fails_only_where_the_table_says_changed():
    """One decision: a row the table calls "same" never fails a gate, whatever its figures say."""
    row = {
        "method": "ngram",
        "task": "code",
        "figure": "acceptance_rate",
        "position": None,
        "comparable": True,
        "relative": 0.72,
        "verdict": "same",
    }
    t = gate.parse("acceptance_rate:+1%")
    assert not gate.evaluate(t, [row], [], [])[0]["failed"]
    assert gate.evaluate(t, [{**row, "verdict": "changed"}], [], [])[0]["failed"]
