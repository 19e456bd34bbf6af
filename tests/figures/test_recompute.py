"""figures/recompute.py: a summary's acceptance figures recomputed from its request records (else its own sums),
with the run's own accounting, and every figure summary.json states otherwise found; results/reader.py applies it
on every reading (issue 43, item 4)."""

from __future__ import annotations

import json
import shutil

import pytest
from rich.console import Console

from specstack.figures import recompute
from specstack.figures.recompute import ABSENT, UNKNOWN
from specstack.measure import accounting
from specstack.report import console_table
from specstack.results.reader import load_run
from specstack.results.summary import TaskFigures
from specstack.runs import method_summary
from tests.bundles import figures, make_run

pytestmark = pytest.mark.unit

HIST = [0, 1, 2, 0]  # K=3, 3 steps, 9 drafts, 5 accepted: 55.6 %


def _edit(run, task: str, change, method: str = "ngram") -> None:
    path = run / method / "summary.json"
    s = json.loads(path.read_text())
    change(s["tasks"][task])
    path.write_text(json.dumps(s))


@pytest.fixture
def run(tmp_path):
    return make_run(tmp_path, "r", k=3, hist=HIST)


def test_the_summary_keys_are_the_runs_own():
    """recompute names the accounting's figures exactly as runs/method_summary.py wrote them at run time."""
    spec = {
        "num_spec_steps": 3,
        "num_draft_tokens": 7,
        "num_accepted_draft_tokens": 4,
        "acceptance_histogram": [1, 0, 2, 0],
        "per_step_drafted": [3, 3, 1],
        "per_step_accepted": [2, 2, 0],
    }
    acc = accounting.from_requests([spec, {**spec, "per_step_drafted": [1, 3, 3]}])
    assert recompute.acceptance_figures(acc) == method_summary._acceptance(acc.to_dict())
    assert recompute.acceptance_figures(None) == method_summary._acceptance({})
    rows = [{"finish_reason": "stop", "usage": {"completion_tokens": 5}}, {"finish_reason": None, "usage": None}]
    assert recompute.answers(rows) == method_summary._answers(rows)


def test_a_consistent_bundle_has_no_finding(run):
    assert load_run(run).findings == []


def test_an_edited_rate_is_found_and_replaced_by_what_the_records_give(run):
    _edit(run, "code", lambda f: f.update(acceptance_rate=0.956))
    data = load_run(run)
    [f] = data.findings
    assert (f.method, f.task, f.phase, f.figure, f.check, f.source) == (
        "ngram",
        "code",
        "greedy",
        "acceptance_rate",
        "differs",
        "records",
    )
    assert f.stated == 0.956 and f.recomputed == pytest.approx(5 / 9)
    assert data.methods["ngram"].figures("code").acceptance_rate == pytest.approx(5 / 9)
    assert data.methods["ngram"].figures("chat").acceptance_rate == pytest.approx(5 / 9)  # untouched


def test_a_deleted_or_nulled_figure_is_missing_and_recomputed(run):
    _edit(run, "code", lambda f: f.pop("mean_acceptance_length"))
    _edit(run, "chat", lambda f: f.update(acceptance_rate=None))  # null although the sums say drafts
    data = load_run(run)
    found = {(f.task, f.figure): f for f in data.findings}
    assert found.keys() == {("code", "mean_acceptance_length"), ("chat", "acceptance_rate")}
    assert found["code", "mean_acceptance_length"].stated is ABSENT
    assert found["chat", "acceptance_rate"].stated is None and found["chat", "acceptance_rate"].check == "missing"
    assert data.methods["ngram"].figures("code").mean_acceptance_length == pytest.approx(1 + 5 / 3)


def test_edited_sums_are_found_against_the_records(run):
    def edit(f):
        f["num_accepted_draft_tokens"], f["acceptance_rate"] = 8, 8 / 9

    _edit(run, "code", edit)
    data = load_run(run)
    found = {f.figure: f for f in data.findings}
    assert found.keys() == {"num_accepted_draft_tokens", "acceptance_rate"}  # the length left as it was
    assert (found["num_accepted_draft_tokens"].stated, found["num_accepted_draft_tokens"].recomputed) == (8, 5)
    assert data.methods["ngram"].figures("code").num_accepted_draft_tokens == 5


def test_without_records_the_sums_decide_and_a_lost_sum_is_unknown(run):
    (run / "ngram" / "acceptance" / "code.jsonl").unlink()
    _edit(run, "code", lambda f: [f.update(acceptance_rate=0.956), f.pop("histogram")])
    data = load_run(run)
    found = {f.figure: f for f in data.findings}
    assert found["acceptance_rate"].source == "sums" and found["acceptance_rate"].recomputed == pytest.approx(5 / 9)
    # the histogram is gone with nothing to give it back: missing (never n/a), and what rests on it unverified
    assert found["histogram"].recomputed is UNKNOWN and found["histogram"].unknown
    assert "per_position" not in found and data.methods["ngram"].figures("code").histogram is None


def test_a_plain_decode_summary_is_not_flagged_for_its_nulls(run):
    """The baseline's figures are null (no drafts): n/a, which is what its records give too."""
    assert [f for f in load_run(run).findings if f.method == "baseline"] == []
    f = TaskFigures.from_json({**figures(HIST), "num_draft_tokens": 0, "acceptance_rate": 0.0})
    assert recompute.from_sums(f)["acceptance_rate"] is None  # nothing drafted: n/a, never 0 %


def test_sampled_phases_and_categories_are_checked_from_their_own_records(tmp_path):
    run = make_run(tmp_path, "r", k=3, hist=HIST)
    d = run / "ngram"
    s = json.loads((d / "summary.json").read_text())
    code = s["tasks"]["code"]
    phase = {k: code[k] for k in recompute.ACCEPTANCE_NAMES}
    code["sampled"] = {"0.6": {"temperature": 0.6, "status": "ok", **phase}}
    code["categories"] = {"c1": {"requests": 2, **phase}}
    (d / "summary.json").write_text(json.dumps(s))
    shutil.copy(d / "acceptance" / "code.jsonl", tmp_path / "code.jsonl")
    lines = [json.loads(x) for x in (d / "acceptance" / "code.jsonl").read_text().splitlines()]
    (d / "acceptance" / "code.jsonl").write_text("".join(json.dumps({**x, "category": "c1"}) + "\n" for x in lines))
    (d / "sampled").mkdir()
    (d / "sampled" / "code-t0.6.jsonl").write_text((tmp_path / "code.jsonl").read_text())
    assert load_run(run).findings == []
    code["sampled"]["0.6"]["acceptance_rate"] = 0.2
    code["categories"]["c1"]["mean_acceptance_length"] = 9.0
    (d / "summary.json").write_text(json.dumps(s))
    found = {(f.phase, f.figure) for f in load_run(run).findings}
    assert found == {("t0.6", "acceptance_rate"), ("greedy · c1", "mean_acceptance_length")}
    out = Console(record=True, width=300, color_system=None)  # the console's category table marks the cell
    console_table.print_run(run, out)
    [c1] = [line for line in out.export_text().splitlines() if line.startswith("│ c1 ")]
    assert "55.6 % · 2.67 ⚑" in c1


def test_how_the_answers_ended_is_checked_against_the_records(run):
    """The finish reasons and completion tokens the acceptance heading counts are the records' too."""
    _edit(run, "code", lambda f: f.update(finish_reasons={"stop": 2}, completion_tokens=999))
    found = {f.figure: f for f in load_run(run).findings}
    assert found.keys() == {"finish_reasons", "completion_tokens"}
    assert found["finish_reasons"].recomputed == {"stop": 1, "length": 1}
    assert found["completion_tokens"].recomputed == 7  # "a b c d" and "x y z": one token per word


def _edit_cell(run, change, method: str = "ngram", task: str = "code") -> dict:
    """`change` applied to the method's first bench cell of the task in summary.json; the cell as it was."""
    path = run / method / "summary.json"
    s = json.loads(path.read_text())
    cell = s["tasks"][task]["bench"][0]
    before = dict(cell)
    change(cell)
    path.write_text(json.dumps(s))
    return before


def test_an_edited_bench_figure_is_found_against_its_bench_file(run):
    before = _edit_cell(run, lambda c: (c.update(output_throughput=2 * c["output_throughput"]), c.pop("mean_tpot_ms")))
    data = load_run(run)
    found = {f.figure: f for f in data.findings}
    assert sorted(found) == ["mean_tpot_ms", "output_throughput"], data.findings
    tput, tpot = found["output_throughput"], found["mean_tpot_ms"]
    load = "c=" + str(before["concurrency"])
    assert (tput.method, tput.task, tput.phase, tput.check, tput.source) == (
        "ngram",
        "code",
        f"bench {load} r0",
        "differs",
        "bench file",
    )
    assert (tput.stated, tput.recomputed) == (2 * before["output_throughput"], before["output_throughput"])
    assert (tpot.stated, tpot.recomputed, tpot.check) == (ABSENT, before["mean_tpot_ms"], "missing")
    # every reader gets the file's figures back
    cell = data.methods["ngram"].figures("code").cells[0]
    assert (
        cell.output_throughput == before["output_throughput"] and cell.figure("mean_tpot_ms") == before["mean_tpot_ms"]
    )


def test_a_bench_cell_without_its_file_or_that_failed_is_left_as_stated(run, tmp_path):
    before = _edit_cell(run, lambda c: c.update(output_throughput=123.0))
    (run / "ngram" / before["file"]).unlink()
    assert load_run(run).findings == []
    failed = make_run(tmp_path, "failed", k=3, hist=HIST)  # a failed cell's file is not its figures
    _edit_cell(failed, lambda c: c.update(status="failed", output_throughput=123.0))
    assert load_run(failed).findings == []
    _edit_cell(failed, lambda c: c.update(status="ok"))
    assert [f.figure for f in load_run(failed).findings] == ["output_throughput"]


def test_an_older_summary_is_held_against_bench_under_bench_s_own_names(run):
    """Summaries written before the rename keep bench's `max_concurrent_requests` and its acceptance rate in percent
    (`spec_decode_acceptance_rate`): no finding for the names they lack, one for a value edited under the old name."""

    def older(c: dict) -> None:
        c["max_concurrent_requests"] = c.pop("max_requests_active_in_one_second")
        c["spec_decode_acceptance_rate"] = None if c["acceptance_rate"] is None else 100 * c["acceptance_rate"]
        c.pop("acceptance_rate")

    before = _edit_cell(run, older)
    assert load_run(run).findings == []
    _edit_cell(run, lambda c: c.update(max_concurrent_requests=(c["max_concurrent_requests"] or 0) + 5))
    [f] = load_run(run).findings
    assert (f.figure, f.stated, f.recomputed) == (
        "max_concurrent_requests",
        (before["max_requests_active_in_one_second"] or 0) + 5,
        before["max_requests_active_in_one_second"],
    )


def test_the_bench_figures_are_the_ones_the_run_writes():
    """recompute holds a cell against the same function runs/method_summary.py built it with."""
    from specstack.figures import bench_cell
    from tests.bundles import bench_json

    data = bench_json(5.0, 100.0, acc_len=2.5)
    assert bench_cell.copied(data).items() <= bench_cell.cell_figures(data, None, 1).items()
    assert method_summary.bench_cell is bench_cell
