"""A summary.json edited by hand in a real bundle (the session sweep on real vLLM, CPU, tiny models): report,
the console table and compare show the figures its request records give, flag each edited figure with the value
in summary.json and the recomputed one, never read a lost figure as "n/a" (no drafts), and compare's table and
its --fail-on gate say the same thing (issue 43, item 4)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from rich.console import Console

from specstack.cli.main import main
from specstack.report import build as report
from specstack.report import console_table
from specstack.results.reader import load_run

pytestmark = pytest.mark.integration


def _drafting(run_dir: Path) -> tuple[str, str, dict]:
    """A method × task of the real sweep that drafted and accepted, and its figures as the run wrote them."""
    for folder in sorted(run_dir.iterdir()):
        summary = folder / "summary.json"
        if summary.exists() and "." not in folder.name:
            for task, f in json.loads(summary.read_text()).get("tasks", {}).items():
                if f.get("num_draft_tokens") and f.get("num_accepted_draft_tokens"):
                    return folder.name, task, f
    raise AssertionError(f"no method of {run_dir} drafted and accepted a draft")


def _copy(sweep_run, tmp_path: Path, name: str) -> Path:
    dst = tmp_path / name
    shutil.copytree(sweep_run["run_dir"], dst, ignore=shutil.ignore_patterns("report", "report.*"))
    return dst


def _edit(run: Path, method: str, task: str, change) -> None:
    path = run / method / "summary.json"
    summary = json.loads(path.read_text())
    change(summary["tasks"][task])
    path.write_text(json.dumps(summary))


def _pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def _table(run: Path) -> str:
    out = Console(record=True, width=400, color_system=None)
    console_table.print_run(run, out)
    return out.export_text()


def _row(md: str, start: str) -> str:
    """The first Markdown table row that starts with `start` ("| ngram | 4 |")."""
    return next(line for line in md.splitlines() if line.startswith(start))


@pytest.fixture(scope="module")
def edited(sweep_run, tmp_path_factory):
    """Run A as the sweep wrote it; run B with one method's acceptance rate raised by 40 points in summary.json."""
    tmp = tmp_path_factory.mktemp("edited")
    a, b = _copy(sweep_run, tmp, "a"), _copy(sweep_run, tmp, "b")
    method, task, figures = _drafting(a)
    shift = 0.4 if figures["acceptance_rate"] < 0.6 else -0.4  # 55.6 % -> 95.6 % (issue 43)
    _edit(b, method, task, lambda f: f.update(acceptance_rate=f["acceptance_rate"] + shift))
    return {
        "a": a,
        "b": b,
        "method": method,
        "task": task,
        "figures": figures,
        "tmp": tmp,
        "shift": shift,
        "label": load_run(a).methods[method].display_name,
    }


def test_an_edited_rate_is_shown_as_its_records_give_it_and_named(edited):
    b, method, task, f, label = edited["b"], edited["method"], edited["task"], edited["figures"], edited["label"]
    real, forged = _pct(f["acceptance_rate"]), _pct(f["acceptance_rate"] + edited["shift"])
    md = report.write_report(b).read_text()
    # the finding: method, task, figure, the value in summary.json and the recomputed one
    finding = _row(md, f"| {method} | {task} | greedy | acceptance_rate |")
    assert forged in finding and real in finding and "records" in finding, finding
    # the acceptance table shows the recomputed rate, flagged; the forged one is in the finding only
    assert any(line.startswith(f"| {label} |") and f"{real} ⚑" in line for line in md.splitlines()), md
    assert not [
        line for line in md.splitlines() if line.startswith(f"| {label} |") and forged in line and line != finding
    ]
    # the console table (`specstack table`): the recomputed rate flagged, and the finding in words
    text = _table(b)
    row = next(line for line in text.splitlines() if line.startswith(f"│ {label} "))
    assert f"{real} ⚑" in row and forged not in row, row
    assert f"{method} · {task} · greedy: acceptance_rate: summary.json says {forged}" in text


def test_compare_and_its_gate_agree_on_an_edited_rate(edited, capsys):
    a, b, method, task = edited["a"], edited["b"], edited["method"], edited["task"]
    out = edited["tmp"] / "cmp-rate"
    # the gate reads the table's verdict on the recomputed figures: nothing moved, so nothing fails
    code = main(["compare", str(a), str(b), "--out", str(out), "--fail-on", "acceptance_rate:+1%,acceptance_rate:-1%"])
    err = capsys.readouterr().err
    assert code == 0, err
    doc = json.loads((out / "compare.json").read_text())
    [rate] = [
        r for r in doc["acceptance"] if (r["method"], r["task"], r["figure"]) == (method, task, "acceptance_rate")
    ]
    assert rate["verdict"] == "same" and rate["a"] == rate["b"] and rate["flagged"] == "B"
    assert doc["changed"] == [] and not doc["gate_failed"]
    [finding] = [x for x in doc["summary_findings"] if x["figure"] == "acceptance_rate"]
    assert (finding["side"], finding["method"], finding["task"]) == ("B", method, task)
    md = (out / "compare.md").read_text()
    assert "**0 figure(s) changed**" in md and "⚑ summary.json disagrees" in md
    assert f"B: {method} · {task} · greedy: acceptance_rate: summary.json says" in err


def test_a_deleted_figure_is_recomputed_and_one_beyond_recomputing_reads_missing(edited, sweep_run, capsys):
    tmp, method, task, f = edited["tmp"], edited["method"], edited["task"], edited["figures"]
    b = _copy(sweep_run, tmp, "deleted")
    _edit(b, method, task, lambda x: x.pop("mean_acceptance_length"))
    md = report.write_report(b).read_text()
    length = f"{f['mean_acceptance_length']:.2f} ⚑"
    assert any(line.startswith(f"| {edited['label']} |") and length in line for line in md.splitlines()), (
        "the deleted length is recomputed from the records, flagged"
    )
    assert "(no such key)" in _row(md, f"| {method} | {task} | greedy | mean_acceptance_length |")
    # the rate, its sums and the records all gone: nothing can give it back, and it never reads as n/a
    gone = _copy(sweep_run, tmp, "gone")
    _edit(gone, method, task, lambda x: [x.pop(k) for k in ("acceptance_rate", "num_accepted_draft_tokens")])
    (gone / method / "acceptance" / f"{task}.jsonl").unlink()
    text = _table(gone)
    row = next(line for line in text.splitlines() if line.startswith(f"│ {edited['label']} "))
    assert "missing ⚑" in row and "n/a" not in row.split("│")[3], row
    out = tmp / "cmp-gone"
    assert (
        main(["compare", str(edited["a"]), str(gone), "--out", str(out), "--fail-on", "acceptance_rate:-1%"]) == 1
    )  # a figure it cannot read fails the gate
    assert "missing in B's summary.json" in capsys.readouterr().out
    rate = _row((out / "compare.md").read_text(), f"| {edited['label']} | {task} | acceptance_rate |")
    assert rate.split("|")[5].strip() == "missing ⚑" and "missing in B's summary.json" in rate  # B's cell, rate


def test_edited_sums_are_named_against_the_records(edited, sweep_run):
    tmp, method, task, f = edited["tmp"], edited["method"], edited["task"], edited["figures"]
    b = _copy(sweep_run, tmp, "sums")

    def scale(x: dict) -> None:  # consistent with each other, not with the answers' records
        x["num_accepted_draft_tokens"] = 2 * x["num_accepted_draft_tokens"]
        x["acceptance_rate"] = x["num_accepted_draft_tokens"] / x["num_draft_tokens"]

    _edit(b, method, task, scale)
    md = report.write_report(b).read_text()
    sums = _row(md, f"| {method} | {task} | greedy | num_accepted_draft_tokens |")
    assert f"| {2 * f['num_accepted_draft_tokens']} | {f['num_accepted_draft_tokens']} | records |" in sums, sums
    assert f"{_pct(f['acceptance_rate'])} ⚑" in md and _pct(2 * f["acceptance_rate"]) in _row(
        md, f"| {method} | {task} | greedy | acceptance_rate |"
    )
    out = tmp / "cmp-sums"
    assert main(["compare", str(edited["a"]), str(b), "--out", str(out), "--fail-on", "acceptance_rate:+1%"]) == 0
    assert "**0 figure(s) changed**" in (out / "compare.md").read_text()


def test_an_edited_bench_throughput_is_read_again_from_its_bench_file(edited, sweep_run, capsys):
    """A bench cell's output throughput tripled in summary.json (a forged speed-up): the report names it against
    the cell's `vllm bench serve` file, every reader gets the file's figure back, and compare's throughput gate
    sees nothing move."""
    tmp, method, task = edited["tmp"], edited["method"], edited["task"]
    b = _copy(sweep_run, tmp, "bench")
    path = b / method / "summary.json"
    summary = json.loads(path.read_text())
    cell = summary["tasks"][task]["bench"][0]
    real = cell["output_throughput"]
    cell["output_throughput"] = 3 * real
    path.write_text(json.dumps(summary))
    bench_file = json.loads((b / method / cell["file"]).read_text())
    assert bench_file["output_throughput"] == real  # the file the run wrote, untouched
    md = report.write_report(b).read_text()
    finding = _row(md, f"| {method} | {task} | bench c={cell['concurrency']} r{cell['repeat']} | output_throughput |")
    assert "| bench file |" in finding, finding
    [f] = [x for x in load_run(b).findings if x.figure == "output_throughput"]
    assert (f.stated, f.recomputed, f.check) == (3 * real, real, "differs")
    assert load_run(b).methods[method].figures(task).cells[0].output_throughput == real
    out = tmp / "cmp-bench"
    assert (
        main(["compare", str(edited["a"]), str(b), "--out", str(out), "--fail-on", "throughput:+1%,throughput:-1%"])
        == 0
    )
    doc = json.loads((out / "compare.json").read_text())
    assert not doc["gate_failed"] and [x["figure"] for x in doc["summary_findings"]] == ["output_throughput"]
    assert "its bench file give" in capsys.readouterr().err
