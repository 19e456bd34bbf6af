"""One console table per task for a run: acceptance, cross-check and throughput against the baseline
of the same target. Ratios are computed from the bundle's summaries, nothing else."""

from __future__ import annotations

import io
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from specstack.figures import stats as st
from specstack.figures.recompute import Finding
from specstack.figures.stats import MIN_REPEATS
from specstack.measure import per_request
from specstack.report import findings as shown
from specstack.report import guards, loop_guard, marks, prefix_cache
from specstack.report.acceptance import answers_by_target, finish_by_target, pooled, target_name
from specstack.report.format import num, pct, weights_line
from specstack.report.loops import loop_rows
from specstack.results import archive
from specstack.results.files import atomic_write_text
from specstack.results.layout import TABLES_FILE
from specstack.results.reader import FailedRun, RunData, display_name, load_run
from specstack.results.summary import Acceptance, BenchCell, CrossCheck, Summary, TaskFigures, given


def summaries_of(run: RunData) -> tuple[dict[str, Summary], list[FailedRun]]:
    """The run's results as the one bundle reader chose them (never a `.failed-` or `.replaced-` attempt beside a
    good one), baselines first; and the failed methods that have no good result."""
    return {name: md.record for name, md in run.methods.items()}, [f for f in run.failed if not f.superseded]


Summaries = Mapping[str, Summary | dict[str, Any]]  # the tables take records, or summaries as JSON (Summary.of)
Findings = Mapping[str, list[Finding]]  # method -> what its summary.json stated otherwise (results/reader.py)


class Mark(Protocol):
    """mark(text, *figures): the cell flagged where the method's summary.json disagreed on one of the figures."""

    def __call__(self, text: str, *figures: str) -> str: ...


def _marked(found: Findings | None, name: str, task: str, phase: str = "greedy") -> Mark:
    """mark(figure, text): the cell flagged where the method's summary.json disagreed on it (report/findings.py)."""
    mine = [f for f in (found or {}).get(name, []) if (f.task, f.phase) == (task, phase)]

    def mark(text: str, *figures: str) -> str:
        hit = [f for f in mine if f.figure in figures]
        return shown.cell(text, next((f for f in hit if f.unknown), hit[0]) if hit else None)

    return mark


def _records(summaries: Summaries) -> dict[str, Summary]:
    return {name: Summary.of(s) for name, s in summaries.items()}


def _throughput(summary: Summary, task: str) -> dict[int, float]:
    """Output tokens/s per concurrency (median over repeats)."""
    by_c: dict[int, list[float]] = {}
    for cell in _figures(summary, task).cells:
        # open-loop cells: the report; a closed-loop cell always has its concurrency
        if cell.output_throughput is not None and cell.closed_loop and cell.concurrency is not None:
            by_c.setdefault(cell.concurrency, []).append(cell.output_throughput)
    return {c: sorted(v)[len(v) // 2] for c, v in by_c.items()}


def _figures(summary: Summary, task: str) -> TaskFigures:
    return summary.task_figures.get(task) or TaskFigures()


def _median_of(cells: list[BenchCell], name: str) -> float | None:
    return st.median([v for v in (c_.to_json().get(name) for c_ in cells) if v is not None])


def stalled_concurrencies(summary: Summary | dict[str, Any], task: str) -> set[int]:
    """Concurrencies at which a repeat stalled (measure/per_request.py, from the summary's copy of bench's
    per-request figures): a pause in sending, a TTFT/E2EL outlier, or slower than c=1 one after another; and c=1
    when it was slower per request than a higher concurrency of the same server (report/marks.py `slow_c1`)."""
    by_c = _cells_by_concurrency(_figures(Summary.of(summary), task))
    serial = [c_.figure("mean_e2el_ms") for c_ in by_c.get(1, []) if c_.figure("mean_e2el_ms")]
    serial_mean = sorted(serial)[len(serial) // 2] if serial else None
    stalled = {
        c
        for c, cells in by_c.items()
        if c is not None  # a closed-loop cell always has its concurrency
        and any(
            (c_.per_request or {}).get("stall")
            or per_request.slower_than_serial(c_.figure("mean_e2el_ms"), c, serial_mean)
            for c_ in cells
        )
    }
    higher = {c: _median_of(cells, "mean_e2el_ms") for c, cells in by_c.items() if c is not None and c > 1}
    slow = marks.slow_c1(_median_of(by_c.get(1, []), "mean_e2el_ms"), higher)  # as report/speed.py's medians
    return stalled | ({1} if slow is not None else set())


def tokens_per_pass(summary: Summary | dict[str, Any], task: str) -> dict[int, float]:
    """The method's tokens per target pass per concurrency (median over repeats, as report/speed.py's bound):
    the most a drafter that cost nothing could raise throughput by."""
    out = {}
    for c, cells in _cells_by_concurrency(_figures(Summary.of(summary), task)).items():
        passes = []
        for c_ in cells:
            f = c_.to_json()
            out_tokens, n = f.get("total_output_tokens"), f.get("completed")
            decode = None if out_tokens is None or n is None else out_tokens - n
            passes.append(
                st.tokens_per_pass(decode, f.get("spec_decode_num_drafts"), f.get("spec_decode_accepted_tokens"))
            )
        bound = st.median([p for p in passes if p is not None])
        if c is not None and bound is not None:
            out[c] = bound
    return out


def _cells_by_concurrency(task: TaskFigures) -> dict[int | None, list[BenchCell]]:
    by_c: dict[int | None, list[BenchCell]] = {}
    for cell in task.cells:
        if cell.closed_loop:
            by_c.setdefault(cell.concurrency, []).append(cell)
    return by_c


def crosscheck_mark(summary: Summary | dict[str, Any]) -> str:
    """The cross-check at a glance: ✔ (every identity exact), ✘ N (N mismatches), n/a (nothing to check), or
    failed; what was checked, by kind, is report.md's (report/crosscheck.label)."""
    summary = Summary.of(summary)
    cc = summary.crosscheck or CrossCheck.from_json({})
    if summary.status != "ok" and not cc.to_json():
        return "[red]failed[/]"
    if cc.ok:
        return "[green]✔[/]" if cc.checks else "[dim]n/a[/]"
    return f"[red]✘ {len(given(cc, 'mismatches', []))}[/]"


def ended(summaries: Summaries, task: str) -> str:
    """How the task's acceptance answers ended, per target model (two targets' answers are never pooled):
    "length 96, stop 16 (7 methods × 16 answers, pooled)", or "tiny-qwen3: length 80 (5 methods × 16 answers,
    pooled); tiny-mimo: length 16, stop 16 (2 methods × 16 answers, pooled)"."""
    items = [(target_name(s), _figures(s, task).finish_reasons) for s in _records(summaries).values()]
    by_target, answers = finish_by_target(items), answers_by_target(items)

    def text(target: str, counts: dict[str, int]) -> str:
        how = pooled(answers.get(target, []))  # "2 methods × 8 answers, pooled": the counts sum every method's answers
        return (", ".join(f"{reason} {n}" for reason, n in sorted(counts.items())) or "none") + (
            f" ({how})" if how else ""
        )

    if len(by_target) > 1:
        return "; ".join(f"{t}: {text(t, c)}" for t, c in by_target.items())
    return next((text(t, c) for t, c in by_target.items()), "none")


def task_heading(summaries: Summaries, task: str) -> str:
    """The line above a task's table (a line of its own: a table's title would wrap at the narrow table's width)."""
    return f"task: {task} (acceptance answers ended by: {ended(summaries, task)})"


BEYOND = "‼"  # a ratio past what free drafting allows: distinct from ⚠, it is impossible, not only unsteady


def beyond_bound_cells(summaries: Summaries, task: str) -> bool:
    """Whether a method's throughput ratio on the task exceeds its tokens per target pass (the ‼ legend's test)."""
    records = _records(summaries)
    for s in records.values():
        base = records.get(s.baseline_method or "")
        if base is None:
            continue
        mine, theirs, bounds = _throughput(s, task), _throughput(base, task), tokens_per_pass(s, task)
        if any(marks.beyond_bound(tp / theirs[c], bounds.get(c)) for c, tp in mine.items() if theirs.get(c)):
            return True
    return False


def task_table(summaries: Summaries, task: str, found: Findings | None = None) -> Table:
    """One row a method, read at a glance: acceptance, mean acceptance length, the cross-check as ✔/✘, and output
    throughput with its ratio to the baseline per concurrency; every other figure is report.md's. `found`: per
    method what its summary.json stated otherwise (those cells show the recomputed figure, flagged)."""
    records = _records(summaries)
    concurrencies = sorted({c for s in records.values() for c in _throughput(s, task)})
    table = Table()
    table.add_column("method", no_wrap=True)
    table.add_column("vs")
    for col in ("acceptance", "acc. length", "check"):
        table.add_column(col, justify="right", no_wrap=True)
    for c in concurrencies:
        table.add_column(f"c={c} (× base)", justify="right", no_wrap=True)
    for name, s in records.items():
        figures = _figures(s, task)
        base = records.get(s.baseline_method or "")
        base_tp = _throughput(base, task) if base else {}
        mine = _throughput(s, task)
        stalled = stalled_concurrencies(s, task) | (stalled_concurrencies(base, task) if base else set())
        bounds = tokens_per_pass(s, task) if base else {}
        cells = []
        for c in concurrencies:
            tp = mine.get(c)
            ratio = tp / base_tp[c] if tp and base_tp.get(c) else None
            cells.append(
                "n/a"
                if tp is None
                else f"{tp:.1f}"
                + ("" if ratio is None else f" ({ratio:.2f}×)")
                + (f" {BEYOND}" if marks.beyond_bound(ratio, bounds.get(c)) else "")
                + (" ⚠" if c in stalled else "")
            )
        status = "" if s.status == "ok" else " [red](failed)[/]"
        mark = _marked(found, name, task)
        table.add_row(
            display_name(name, s) + status,
            s.baseline_method or "-",
            mark(pct(figures.acceptance_rate), "acceptance_rate"),
            mark(num(figures.mean_acceptance_length), "mean_acceptance_length"),
            crosscheck_mark(s),
            *cells,
        )
    return table


def _rate_and_length(figures: Acceptance | None, mark: Mark | None = None) -> str:
    """ "55.6 % · 2.67"; flagged where `mark` (_marked, the method's findings on that phase) says so."""
    text = (
        "n/a"
        if figures is None or not figures.drafted
        else f"{pct(figures.acceptance_rate)} · {num(figures.mean_acceptance_length)}"
    )
    return mark(text, "acceptance_rate", "mean_acceptance_length") if mark else text


def _per_method_table(title: str, first: str, summaries: dict[str, Summary]) -> Table:
    """A row label, its requests, then one column per method."""
    table = Table(title=title, title_justify="left")
    table.add_column(first)
    table.add_column("requests", justify="right")
    for name, s in summaries.items():
        table.add_column(display_name(name, s), justify="right")
    return table


def category_table(summaries: Summaries, task: str, found: Findings | None = None) -> Table | None:
    """Acceptance per dataset category (rate · mean length), one column per method; the last row is the task's
    total, which the categories sum to and which equals the counter deltas (the "Σ_category" checks). `found`:
    as task_table's."""
    records = _records(summaries)
    per_method = {name: _figures(s, task) for name, s in records.items()}
    categories = list(dict.fromkeys(c for f in per_method.values() for c in f.category_figures))
    if not categories:
        return None
    table = _per_method_table(f"{task} by category: acceptance rate · mean length", "category", records)
    first = next(f for f in per_method.values() if f.categories)
    for c in categories:
        mine = first.category_figures.get(c)
        table.add_row(
            c,
            str("n/a" if mine is None else given(mine, "requests", "n/a")),
            *[
                _rate_and_length(f.category_figures.get(c), _marked(found, n, task, f"greedy · {c}"))
                for n, f in per_method.items()
            ],
        )
    table.add_row(
        "[bold]all (the task)[/]",
        str(first.requests),
        *[_rate_and_length(f, _marked(found, n, task)) for n, f in per_method.items()],
    )
    return table


def turn_table(summaries: Summaries, task: str, found: Findings | None = None) -> Table | None:
    """Acceptance per turn (--turns 2), rate · mean length per method: turn 1 (the task), turn 2 (on the
    baseline's turn-1 answers), then turn 2 by category. `found`: as task_table's."""
    records = _records(summaries)
    per_method = {name: _figures(s, task) for name, s in records.items()}
    seconds = {name: f.turn2 for name, f in per_method.items()}
    first = next((t for t in seconds.values() if t is not None), None)
    if first is None:
        return None
    table = _per_method_table(f"{task} per turn: acceptance rate · mean length", "turn", records)
    table.add_row(
        "turn 1 (the task)",
        str(next(iter(per_method.values())).requests),
        *[_rate_and_length(f, _marked(found, n, task)) for n, f in per_method.items()],
    )
    # rows with no second turn are not in turn 2: say how many
    table.add_row(
        f"turn 2 ({given(first, 'left_out', 0)} left out)",
        str(first.requests),
        *[_rate_and_length(t, _marked(found, n, task, "turn2")) for n, t in seconds.items()],
    )
    for c, figures in first.category_figures.items():
        table.add_row(
            f"turn 2 · {c}",
            str(figures.requests),
            *[
                _rate_and_length(
                    None if t is None else t.category_figures.get(c), _marked(found, n, task, f"turn2 · {c}")
                )
                for n, t in seconds.items()
            ],
        )
    return table


def save_tables(run_dir: Path) -> Path:
    """The console tables, as plain text, into the bundle (tables.txt): what the run printed stays with it."""
    out = Console(file=io.StringIO(), record=True, width=250, color_system=None)
    print_run(run_dir, out)
    return atomic_write_text(Path(run_dir) / TABLES_FILE, out.export_text())


def seal_run(run_dir: Path) -> None:
    """At the end of a run: its console tables saved, then SHA256SUMS over every file it produced."""
    save_tables(run_dir)
    archive.seal(run_dir)


def print_run(run_dir: Path, console: Console | None = None) -> None:
    console = console or Console(width=max(120, Console().width))
    run = load_run(run_dir)  # read once: the tables and the prefix-cache rows come from the same reading
    summaries, failed = summaries_of(run)
    weights = weights_line(run.manifest)
    if weights:
        console.print(f"[bold]{weights}[/]")
    marks = guards.guard_rows(run, guards.NoTokenizers())  # a doubled BOS, random prompts (report.md: the fix)
    loops = loop_rows(run)  # acceptance answers that loop (report.md: both figures and the fix)
    # the copy-heavy task first
    tasks = sorted(
        {t for s in summaries.values() for t in s.task_figures}, key=lambda t: (t not in ("code", "edit"), t)
    )
    for task in tasks:
        found = {name: md.findings for name, md in run.methods.items()}
        console.print(
            escape(
                task_heading(summaries, task) + guards.guard_marks(marks, task) + loop_guard.loop_marks(loops, task)
            ),
            soft_wrap=True,
        )
        console.print(task_table(summaries, task, found))
        by_category = category_table(summaries, task, found)
        if by_category is not None:
            console.print(by_category)
        by_turn = turn_table(summaries, task, found)
        if by_turn is not None:
            console.print(by_turn)
        caching = prefix_cache.console_table(run, task)  # only when a method cached prefixes (--prefix-caching)
        if caching is not None:
            console.print(caching)
    console.print(
        "acceptance = Σ accepted / Σ drafted over the task's greedy acceptance answers (n/a = no drafts, "
        "not 0 %); acc. length = mean tokens per verify step. check: the cross-checks, ✔ = every one of the "
        "method exact, ✘ N = N mismatches, n/a = nothing to check. c=N: output tokens/s at concurrency N "
        "(× the baseline's), from vllm bench serve at fixed output length. The histograms, tokens per "
        "target pass, distinct answers and what each cross-check compared: report.md."
    )
    if any(beyond_bound_cells(summaries, t) for t in tasks):
        console.print(
            f"{BEYOND} = the ratio exceeds the method's tokens per target pass (by more than "
            f"{st.BOUND_TOLERANCE - 1:.0%}): more than a drafter that cost nothing could give, so the "
            "baseline's cell was slow, not the method fast (report.md: ⚠ beyond bound)."
        )
    if any(stalled_concurrencies(s, t) for s in summaries.values() for t in s.task_figures):
        console.print(
            "⚠ = a repeat of this cell or of its baseline's stalled (bench's per-request data: a pause in "
            "sending, a TTFT/E2EL outlier, or slower than c=1 one after another), or a c=1 cell of either "
            "was slower per request than the same server at a higher concurrency (a stall or a warm-up): "
            "the figure and its ratio rest on it (report.md: the speed table's note names it)."
        )
    repeats = max(
        (
            len(v)
            for s in summaries.values()
            for t in s.task_figures.values()
            for v in _cells_by_concurrency(t).values()
        ),
        default=0,
    )
    if 0 < repeats < MIN_REPEATS:  # no bench cell (--skip-bench): no ratio to qualify
        console.print(
            f"(× base) are point estimates from {repeats} repeat(s), with no interval under {MIN_REPEATS}: "
            "they say nothing about how much a ratio moves from run to run (report.md: verdicts, "
            "--repeats 3 --replicate sessions for intervals that count)."
        )
    if run.findings:
        console.print(f"[bold red]{shown.FLAG} {shown.HEADING}[/] ({len(run.findings)} figure(s)):")
        for finding in run.findings:
            console.print(f"[red]  {escape(shown.line(finding))}[/]")
        console.print(shown.NOTE)
    for f in failed:
        where = f" ({f.path.name}/)" if f.path else ""
        console.print(f"[red]{f.name}: failed{where}[/]: {f.error}")
