"""The demo / `specstack table` reads a run through the one reader the report uses: a failed or replaced
attempt beside a good result never stands in for it, whatever order the folders are listed in."""

from __future__ import annotations

import json

import pytest
from rich.console import Console

from specstack.report import console_table
from specstack.results.bundle import MethodBundle, update_manifest

pytestmark = pytest.mark.unit


def summary(method: str, rate: float | None, status: str = "ok", baseline: str | None = "baseline") -> dict:
    return {
        "schema": "specstack.summary/1",
        "method": method,
        "status": status,
        "baseline_method": baseline,
        "error": None if status == "ok" else "server died",
        "speculative_config": {"num_speculative_tokens": 4} if baseline else None,
        "crosscheck": {"ok": status == "ok", "checks": 7, "mismatches": []},
        "tasks": {
            "code": {
                "acceptance_rate": rate,
                "mean_acceptance_length": 2.0,
                "histogram": [1, 2],
                "bench": [{"concurrency": 1, "output_throughput": 100.0}],
            }
        },
    }


def publish(results, run_id: str, s: dict, ok: bool, force: bool = False) -> None:
    bundle = MethodBundle(results, run_id, s["method"], force=force)
    bundle.write_json("summary.json", s)
    folder = bundle.finalize(ok)
    update_manifest(
        results / run_id, methods={s["method"]: {"status": s["status"], "dir": folder.name, "error": s["error"]}}
    )


def printed(run_dir) -> str:
    console = Console(record=True, width=220)
    console_table.print_run(run_dir, console)
    return console.export_text()


def test_table_shows_the_good_result_not_the_failed_or_replaced_attempts(tmp_path):
    publish(tmp_path, "r", summary("baseline", None, baseline=None), ok=True)
    publish(tmp_path, "r", summary("ngram", 0.111), ok=True)  # later replaced with --force
    publish(tmp_path, "r", summary("ngram", 0.425), ok=True, force=True)  # the good result
    publish(tmp_path, "r", summary("ngram", 0.999, status="failed"), ok=False, force=True)  # latest, failed
    names = sorted(p.name.split("-")[0] for p in (tmp_path / "r").iterdir() if p.name.startswith("ngram"))
    assert names == ["ngram", "ngram.failed", "ngram.replaced"]
    for folder in (tmp_path / "r").iterdir():  # every attempt says it is "ngram": the folder decides
        if folder.name.startswith("ngram"):
            assert json.loads((folder / "summary.json").read_text())["method"] == "ngram"

    text = printed(tmp_path / "r")
    rows = [line for line in text.splitlines() if line.strip("│ ").startswith("ngram")]
    assert len(rows) == 1, text
    assert "42.5 %" in rows[0]
    assert "99.9 %" not in text and "11.1 %" not in text
    assert "(failed)" not in rows[0]


def test_a_method_with_only_failed_attempts_is_named_under_the_table(tmp_path):
    publish(tmp_path, "r", summary("baseline", None, baseline=None), ok=True)
    publish(tmp_path, "r", summary("draft_model", 0.5, status="failed"), ok=False)
    text = printed(tmp_path / "r")
    assert not any(line.strip("│ ").startswith("draft_model") for line in text.splitlines() if "│" in line)
    failed = [line for line in text.splitlines() if line.startswith("draft_model: failed")]
    assert failed and "server died" in failed[0] and "draft_model.failed-" in failed[0], text


def test_one_repeat_ratios_are_called_point_estimates(tmp_path):
    publish(tmp_path, "r", summary("baseline", None, baseline=None), ok=True)
    publish(tmp_path, "r", summary("ngram", 0.4), ok=True)
    text = printed(tmp_path / "r")
    assert "point estimates from 1 repeat(s), with no interval under 3" in text
    assert "acceptance answers ended by" in text


def test_the_table_names_a_method_by_its_label(tmp_path):
    publish(tmp_path, "r", summary("baseline", None, baseline=None), ok=True)
    publish(tmp_path, "r", {**summary("suffix", 0.4), "label": "suffix (prompt trees only)"}, ok=True)
    text = printed(tmp_path / "r")
    rows = [line.strip("│ ") for line in text.splitlines() if line.strip("│ ").startswith("suffix")]
    assert len(rows) == 1 and rows[0].startswith("suffix (prompt trees only)"), text


def test_a_task_with_categories_ends_with_one_row_per_category_and_the_task_total(tmp_path):
    base, ngram = summary("baseline", None, baseline=None), summary("ngram", 0.5)
    base["tasks"]["code"]["categories"] = {"coding": {"requests": 1}, "writing": {"requests": 1}}
    base["tasks"]["code"]["requests"] = ngram["tasks"]["code"]["requests"] = 2
    ngram["tasks"]["code"].update(num_draft_tokens=8, acceptance_rate=0.5, mean_acceptance_length=3.0)
    ngram["tasks"]["code"]["categories"] = {
        "coding": {"requests": 1, "num_draft_tokens": 4, "acceptance_rate": 0.75, "mean_acceptance_length": 4.0},
        "writing": {"requests": 1, "num_draft_tokens": 4, "acceptance_rate": 0.25, "mean_acceptance_length": 2.0},
    }
    publish(tmp_path, "r", base, ok=True)
    publish(tmp_path, "r", ngram, ok=True)
    text = printed(tmp_path / "r").split(" by category: ", 1)[1]
    rows = [" ".join(line.replace("│", " ").split()) for line in text.splitlines() if "│" in line]
    assert rows == ["coding 1 n/a 75.0 % · 4.00", "writing 1 n/a 25.0 % · 2.00", "all (the task) 2 n/a 50.0 % · 3.00"]


def test_turn_2_shows_under_the_task_with_its_categories(tmp_path):
    base, ngram = summary("baseline", None, baseline=None), summary("ngram", 0.5)
    base["tasks"]["code"]["requests"] = ngram["tasks"]["code"]["requests"] = 2
    ngram["tasks"]["code"].update(num_draft_tokens=8, acceptance_rate=0.5, mean_acceptance_length=3.0)
    base["tasks"]["code"]["turns"] = {"2": {"requests": 1, "left_out": 1, "categories": {"coding": {"requests": 1}}}}
    ngram["tasks"]["code"]["turns"] = {
        "2": {
            "requests": 1,
            "left_out": 1,
            "num_draft_tokens": 4,
            "acceptance_rate": 0.25,
            "mean_acceptance_length": 2.0,
            "categories": {
                "coding": {"requests": 1, "num_draft_tokens": 4, "acceptance_rate": 0.25, "mean_acceptance_length": 2.0}
            },
        }
    }
    publish(tmp_path, "r", base, ok=True)
    publish(tmp_path, "r", ngram, ok=True)
    text = printed(tmp_path / "r").split(" per turn: ", 1)[1]
    rows = [" ".join(line.replace("│", " ").split()) for line in text.splitlines() if "│" in line]
    assert rows == [
        "turn 1 (the task) 2 n/a 50.0 % · 3.00",
        "turn 2 (1 left out) 1 n/a 25.0 % · 2.00",
        "turn 2 · coding 1 n/a 25.0 % · 2.00",
    ]


def test_a_ratio_past_free_drafting_and_a_slow_c1_are_marked_in_the_console(tmp_path):
    """Issue 41 point 1: ngram 'won' 1.23× at c=1 against a baseline whose c=1 was slower per request than its own
    c=4, more than its tokens per target pass allow: the console cell carries ‼ and ⚠, each with its legend line;
    report.md's rows decide the same (report/marks.py)."""
    from specstack.report import build
    from tests.bundles import write_slow_c1_run

    run_dir = write_slow_c1_run(tmp_path / "bound")
    rows = {(r["method"], r["concurrency"]): r for r in build.build(run_dir, with_plots=False).speed}
    assert rows[("ngram", 1)]["beyond_bound"] and not rows[("ngram", 4)]["beyond_bound"]
    out = printed(run_dir)
    row = next(line for line in out.splitlines() if line.strip("│ ").startswith("ngram"))
    assert "123.0 (1.23×) ‼ ⚠" in row and "520.0 (0.95×) │" in row  # c=4: within the bound, no stall
    assert "‼ = the ratio exceeds the method's tokens per target pass" in out
    assert "or a c=1 cell of either was slower per request" in out


def test_a_ratio_within_its_bound_carries_no_mark(tmp_path):
    publish(tmp_path, "r", summary("baseline", None, baseline=None), ok=True)
    publish(tmp_path, "r", summary("ngram", 0.5), ok=True)
    out = printed(tmp_path / "r")
    assert "‼" not in out and "⚠" not in out
