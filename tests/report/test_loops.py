"""The report's repetition loops (report/loops.py) on a built bundle whose answers are real answers of the trained
model: counted and named per method and task, acceptance exact with and without them."""

from __future__ import annotations

import json

import pytest
from rich.console import Console

from specstack.report import build, console_table, render, sections, tables
from tests.bundles import chat_record, write_method
from tests.figures.test_loops import REAL

pytestmark = pytest.mark.unit


def _spec(steps: int, drafts: int, accepted: int, histogram: list[int]) -> dict:
    """A request's summary-level metrics; the histogram (steps by tokens accepted) sums to `steps` and `accepted`,
    so the reader's recompute (figures/recompute.py) reads the records as vLLM would write them."""
    assert sum(histogram) == steps and sum(i * n for i, n in enumerate(histogram)) == accepted
    return {
        "num_spec_steps": steps,
        "num_draft_tokens": drafts,
        "num_accepted_draft_tokens": accepted,
        "acceptance_histogram": histogram,
    }


def _write_answers(path, answers: dict[str, tuple[dict, dict | None]]) -> None:
    """Acceptance records whose choices carry the real answers' token ids (what vLLM returns with
    return_token_ids), each with the per-request metrics given."""
    lines = []
    for rid, (answer, spec) in answers.items():
        rec = chat_record(rid, f"prompt {rid}", answer["text"], answer["finish_reason"], spec)
        rec["response"]["choices"][0]["token_ids"] = answer["token_ids"]
        lines.append(json.dumps(rec))
    path.write_text("\n".join(lines) + "\n")


def _looping_run(tmp_path):
    """A baseline and ngram on code, 3 answers each, r0 a real repetition loop of the trained model; ngram's
    per-request metrics make r0 nearly all accepted (a loop is its own best draft)."""
    loop = next(a for a in REAL if a["loop"] and "code-000" in a["source"])
    fine = [a for a in REAL if not a["loop"]][:2]
    run_dir = tmp_path / "loops"
    run_dir.mkdir()
    texts = {"code": {"r0": ("t", "stop"), "r1": ("t", "stop"), "r2": ("t", "stop")}}
    for name, baseline in (("baseline", None), ("ngram", "baseline")):
        d = write_method(
            run_dir,
            name,
            baseline=baseline,
            k=None if baseline is None else 4,
            cells={("code", 1): [(10.0, 100.0, {})]},
            texts=texts,
        )
        specs = (
            [
                _spec(60, 240, 236, [0, 0, 0, 4, 56]),
                _spec(50, 100, 30, [25, 20, 5, 0, 0]),
                _spec(40, 60, 10, [30, 10, 0, 0, 0]),
            ]
            if baseline
            else [None] * 3
        )
        _write_answers(
            d / "acceptance" / "code.jsonl",
            {"r0": (loop, specs[0]), "r1": (fine[0], specs[1]), "r2": (fine[1], specs[2])},
        )
    return run_dir


def test_loops_are_counted_named_and_left_out_of_the_acceptance_without_them(tmp_path):
    run_dir = _looping_run(tmp_path)
    rep = build.build(run_dir, with_plots=False)
    row = next(r for r in rep.loops if r["method"] == "ngram")
    assert row["requests"] == 3 and row["loops"] == 1 and row["loop_ids"].startswith("r0 (period 2, last 251 ")
    assert row["acceptance_rate"] == (236 + 30 + 10) / (240 + 100 + 60)
    assert row["acceptance_rate_without_loops"] == (30 + 10) / (100 + 60)
    assert row["mean_acceptance_length_without_loops"] == 1 + (30 + 10) / (50 + 40)
    assert next(r for r in rep.loops if r["method"] == "baseline")["loops"] == 1
    md = render.render_markdown(sections.blocks(rep))
    assert "### Repetition loops (acceptance phase, greedy)" in md
    assert "| ngram | 3 | 1 | 69.0 % / 25.0 % | 2.84 / 1.44 | r0 (period 2, last 251 tokens) |" in md
    csv, _ = tables.table_bytes("repetition_loops", rep.loops)
    assert csv.splitlines()[0].startswith(b"method,label,task")


def test_no_section_when_nothing_looped(tmp_path):
    run_dir = tmp_path / "fine"
    run_dir.mkdir()
    d = write_method(
        run_dir,
        "baseline",
        baseline=None,
        k=None,
        cells={("code", 1): [(10.0, 100.0, {})]},
        texts={"code": {"r0": ("t", "stop")}},
    )
    _write_answers(d / "acceptance" / "code.jsonl", {"r0": (next(a for a in REAL if not a["loop"]), None)})
    rep = build.build(run_dir, with_plots=False)
    assert rep.loops[0]["loops"] == 0
    assert "Repetition loops" not in render.render_markdown(sections.blocks(rep))
    console = Console(record=True, width=400)
    console_table.print_run(run_dir, console)
    assert "answers loop" not in console.export_text()


LINE = "ngram: 1 of 3 answers loop; acceptance 69.0 % with them, 25.0 % without"


def test_looping_answers_are_a_guard_under_the_task_and_in_the_verdict(tmp_path):
    rep = build.build(_looping_run(tmp_path), with_plots=False)
    md = render.render_markdown(sections.blocks(rep))
    note = next(line for line in md.splitlines() if line.startswith("⚠ **Repetition loops.**"))
    # the drafting method only: the baseline's answer loops too, but it has no acceptance to bias
    assert note.startswith(
        "⚠ **Repetition loops.** ngram: 1 of 3 answers loop (acceptance 69.0 % with them, "
        "25.0 % without). A looping answer is its own best draft"
    )
    assert "Fix: read the acceptance without loops" in note and "baseline:" not in note
    assert md.index("## Task: code") < md.index("⚠ **Repetition loops.**") < md.index("### Speed against")
    # named in the Verdict section, before any task's figures
    assert md.index("**Repetition loops in the acceptance answers**") < md.index("## Task: code")
    assert f"- code: ⚠ {LINE}" in md


def test_the_console_heading_marks_looping_answers(tmp_path):
    console = Console(record=True, width=400)
    console_table.print_run(_looping_run(tmp_path), console)
    heading = next(line for line in console.export_text().splitlines() if line.startswith("task: code"))
    assert heading.endswith(" ⚠ ngram: 1 of 3 answers loop (acceptance 69.0 % with them, 25.0 % without)")
