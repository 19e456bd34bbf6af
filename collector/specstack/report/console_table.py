"""One console table per task for a run: acceptance, cross-check and throughput against the baseline
of the same target. Ratios are computed from the bundle's summaries, nothing else."""
from __future__ import annotations

import io
from collections.abc import Mapping
from itertools import dropwhile
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from specstack.measure import per_request
from specstack.figures.recompute import Finding
from specstack.report import crosscheck, findings as shown, prefix_cache
from specstack.report.acceptance import (acceptance_records, answers_by_target, distinct_outputs, finish_by_target,
                                         pooled, target_name)
from specstack.report.format import num, pct, weights_line
from specstack.figures.stats import MIN_REPEATS, drafting_share, tokens_per_pass
from specstack.results import archive
from specstack.results.files import atomic_write_text
from specstack.results.layout import TABLES_FILE
from specstack.results.reader import display_name, load_run
from specstack.results.summary import Acceptance, BenchCell, CrossCheck, Summary, TaskFigures, given


def summaries_of(run) -> tuple[dict[str, Summary], list]:
    """The run's results as the one bundle reader chose them (never a `.failed-` or `.replaced-` attempt beside a
    good one), baselines first; and the failed methods that have no good result."""
    return {name: md.record for name, md in run.methods.items()}, [f for f in run.failed if not f.superseded]


Summaries = Mapping[str, Summary | dict]   # the tables take records, or summaries as JSON (Summary.of)
Findings = Mapping[str, list[Finding]]     # method -> what its summary.json stated otherwise (results/reader.py)


def _marked(found: Findings | None, name: str, task: str, phase: str = "greedy"):
    """mark(figure, text): the cell flagged where the method's summary.json disagreed on it (report/findings.py)."""
    mine = [f for f in (found or {}).get(name, []) if (f.task, f.phase) == (task, phase)]

    def mark(text: str, *figures: str) -> str:
        hit = [f for f in mine if f.figure in figures]
        return shown.cell(text, next((f for f in hit if f.unknown), hit[0]) if hit else None)
    return mark


def _records(summaries: Summaries) -> dict[str, Summary]:
    return {name: Summary.of(s) for name, s in summaries.items()}


def _histogram(hist: list[int] | None) -> str:
    """[136, 72, 2, 0, 0, 0] -> "[136, 72, 2, 0×3]": long suffix histograms stay readable."""
    if not hist:
        return "n/a"
    zeros = len(hist) - len(list(dropwhile(lambda x: x == 0, reversed(hist))))
    head = [str(x) for x in hist[: len(hist) - zeros]]
    return "[" + ", ".join(head + ([f"0×{zeros}"] if zeros > 1 else ["0"] * zeros)) + "]"


def _throughput(summary: Summary, task: str) -> dict[int, float]:
    """Output tokens/s per concurrency (median over repeats)."""
    by_c: dict[int, list[float]] = {}
    for cell in _figures(summary, task).cells:
        if cell.output_throughput is not None and cell.closed_loop:   # open-loop cells: the report
            by_c.setdefault(cell.concurrency, []).append(cell.output_throughput)
    return {c: sorted(v)[len(v) // 2] for c, v in by_c.items()}


def _figures(summary: Summary, task: str) -> TaskFigures:
    return summary.task_figures.get(task) or TaskFigures()


def stalled_concurrencies(summary: Summary | dict, task: str) -> set[int]:
    """Concurrencies at which a repeat stalled (measure/per_request.py, from the summary's copy of bench's
    per-request figures): a pause in sending, a TTFT/E2EL outlier, or slower than c=1 one after another."""
    by_c = _cells_by_concurrency(_figures(Summary.of(summary), task))
    serial = [c_.figure("mean_e2el_ms") for c_ in by_c.get(1, []) if c_.figure("mean_e2el_ms")]
    serial_mean = sorted(serial)[len(serial) // 2] if serial else None
    return {c for c, cells in by_c.items()
            if any((c_.per_request or {}).get("stall")
                   or per_request.slower_than_serial(c_.figure("mean_e2el_ms"), c, serial_mean) for c_ in cells)}


def bench_acceptance(summary: Summary | dict, task: str) -> str:
    """The perf phase's own acceptance, pooled over the task's closed-loop bench cells (64-token --ignore-eos
    answers, not the acceptance phase's): bench's acceptance length per verify step, then tokens per target pass
    over every decode pass and the share of passes that drafted. ngram's 2.83 per verify step can be 1.69 per
    pass (37 % drafted): only the per-pass figure compares with a drafter that drafts on every pass."""
    cells = [c_ for c_ in _cells_by_concurrency(_figures(Summary.of(summary), task)).values() for c_ in c_]
    drafts = sum(int(c_.figure("spec_decode_num_drafts") or 0) for c_ in cells)
    if not drafts:
        return "n/a"
    accepted = sum(int(c_.figure("spec_decode_accepted_tokens") or 0) for c_ in cells)
    decode = sum(int(c_.total_output_tokens) - int(c_.completed) for c_ in cells
                 if c_.total_output_tokens is not None and c_.completed is not None)
    per_pass, share = tokens_per_pass(decode, drafts, accepted), drafting_share(decode, drafts, accepted)
    return f"{1 + accepted / drafts:.2f} · {num(per_pass)}/pass ({pct(share, 0)} drafted)"


def _cells_by_concurrency(task: TaskFigures) -> dict[int | None, list[BenchCell]]:
    by_c: dict[int | None, list[BenchCell]] = {}
    for cell in task.cells:
        if cell.closed_loop:
            by_c.setdefault(cell.concurrency, []).append(cell)
    return by_c


def crosscheck_label(summary: Summary | dict) -> str:
    summary = Summary.of(summary)
    cc = summary.crosscheck or CrossCheck.from_json({})
    if summary.status != "ok" and not cc.to_json():
        return "[red]failed[/]"
    if cc.ok:
        # the count split by kind (report/crosscheck.py): the independent identities first, the rest apart
        return f"[green]exact: {crosscheck.short_label(summary)}[/]" if cc.checks else "[dim]n/a (no drafts)[/]"
    return f"[red]MISMATCH ({len(given(cc, 'mismatches', []))})[/]"


def ended(summaries: Summaries, task: str) -> str:
    """How the task's acceptance answers ended, per target model (two targets' answers are never pooled):
    "length 96, stop 16 (7 methods × 16 answers, pooled)", or "tiny-qwen3: length 80 (5 methods × 16 answers,
    pooled); tiny-mimo: length 16, stop 16 (2 methods × 16 answers, pooled)"."""
    items = [(target_name(s), _figures(s, task).finish_reasons) for s in _records(summaries).values()]
    by_target, answers = finish_by_target(items), answers_by_target(items)

    def text(target: str, counts: dict[str, int]) -> str:
        how = pooled(answers.get(target, []))   # "2 methods × 8 answers, pooled": the counts sum every method's answers
        return (", ".join(f"{reason} {n}" for reason, n in sorted(counts.items())) or "none") + \
            (f" ({how})" if how else "")
    if len(by_target) > 1:
        return "; ".join(f"{t}: {text(t, c)}" for t, c in by_target.items())
    return next((text(t, c) for t, c in by_target.items()), "none")


def distinct_answers(run, task: str) -> dict[str, str]:
    """Per method: "16 (3 distinct)", the task's acceptance answers and how many differ (report/acceptance.py)."""
    out = {}
    for name, md in run.methods.items():
        records = acceptance_records(md, task)
        n = distinct_outputs(records)
        out[name] = f"{len(records)}" + ("" if n is None else f" ({n} distinct)")
    return out


def task_table(summaries: Summaries, task: str, answers: dict[str, str] | None = None,
               found: Findings | None = None) -> Table:
    """`answers`: per method the task's acceptance answers and how many of them differ (distinct_answers);
    `found`: per method what its summary.json stated otherwise (those cells show the recomputed figure, flagged)."""
    records = _records(summaries)
    concurrencies = sorted({c for s in records.values() for c in _throughput(s, task)})
    table = Table(title=f"task: {task} (acceptance answers ended by: {ended(records, task)})",
                  title_justify="left")
    columns = ("method", "vs") + (("answers",) if answers is not None else ()) + (
        "acceptance rate", "mean acc. length", "histogram", "bench: acc. length · tokens/pass", "cross-check")
    for col in columns:
        table.add_column(col)
    for c in concurrencies:
        table.add_column(f"out tok/s c={c} (× base)", justify="right")
    for name, s in records.items():
        figures = _figures(s, task)
        base = records.get(s.baseline_method or "")
        base_tp = _throughput(base, task) if base else {}
        mine = _throughput(s, task)
        stalled = stalled_concurrencies(s, task) | (stalled_concurrencies(base, task) if base else set())
        cells = []
        for c in concurrencies:
            tp = mine.get(c)
            ratio = f" ({tp / base_tp[c]:.2f}×)" if tp and base_tp.get(c) else ""
            cells.append("n/a" if tp is None else f"{tp:.1f}{ratio}" + (" ⚠" if c in stalled else ""))
        status = "" if s.status == "ok" else " [red](failed)[/]"
        mark = _marked(found, name, task)
        table.add_row(display_name(name, s) + status, s.baseline_method or "-",
                      *([answers.get(name, "n/a")] if answers is not None else []),
                      mark(pct(figures.acceptance_rate), "acceptance_rate"),
                      mark(num(figures.mean_acceptance_length), "mean_acceptance_length"),
                      mark(_histogram(figures.histogram), "histogram"), bench_acceptance(s, task),
                      crosscheck_label(s), *cells)
    return table


def _rate_and_length(figures: Acceptance | None, mark=None) -> str:
    """"55.6 % · 2.67"; flagged where `mark` (_marked, the method's findings on that phase) says so."""
    text = "n/a" if figures is None or not figures.drafted else \
        f"{pct(figures.acceptance_rate)} · {num(figures.mean_acceptance_length)}"
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
        table.add_row(c, str("n/a" if mine is None else given(mine, "requests", "n/a")),
                      *[_rate_and_length(f.category_figures.get(c), _marked(found, n, task, f"greedy · {c}"))
                        for n, f in per_method.items()])
    table.add_row("[bold]all (the task)[/]", str(first.requests),
                  *[_rate_and_length(f, _marked(found, n, task)) for n, f in per_method.items()])
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
    table.add_row("turn 1 (the task)", str(next(iter(per_method.values())).requests),
                  *[_rate_and_length(f, _marked(found, n, task)) for n, f in per_method.items()])
    # rows with no second turn are not in turn 2: say how many
    table.add_row(f"turn 2 ({given(first, 'left_out', 0)} left out)", str(first.requests),
                  *[_rate_and_length(t, _marked(found, n, task, "turn2")) for n, t in seconds.items()])
    for c, figures in first.category_figures.items():
        table.add_row(f"turn 2 · {c}", str(figures.requests),
                      *[_rate_and_length(None if t is None else t.category_figures.get(c),
                                         _marked(found, n, task, f"turn2 · {c}")) for n, t in seconds.items()])
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
    console = console or Console(width=max(150, Console().width))
    run = load_run(run_dir)   # read once: the tables and the prefix-cache rows come from the same reading
    summaries, failed = summaries_of(run)
    weights = weights_line(run.manifest)
    if weights:
        console.print(f"[bold]{weights}[/]")
    # the copy-heavy task first
    tasks = sorted({t for s in summaries.values() for t in s.task_figures}, key=lambda t: (t not in ("code", "edit"), t))
    for task in tasks:
        found = {name: md.findings for name, md in run.methods.items()}
        console.print(task_table(summaries, task, distinct_answers(run, task), found))
        by_category = category_table(summaries, task, found)
        if by_category is not None:
            console.print(by_category)
        by_turn = turn_table(summaries, task, found)
        if by_turn is not None:
            console.print(by_turn)
        caching = prefix_cache.console_table(run, task)   # only when a method cached prefixes (--prefix-caching)
        if caching is not None:
            console.print(caching)
    console.print("acceptance rate = Σ accepted / Σ drafted over the task's requests (no stop strings: each ends "
                  "at EOS, \"stop\", or at max_tokens, \"length\"); n/a = no drafts, not 0 %. Throughput from vllm "
                  "bench serve at fixed output length.")
    console.print("acceptance rate, mean acc. length, histogram: the acceptance phase (greedy chat answers up to "
                  "max_tokens, which may stop at EOS). bench: the perf phase's own figures (fixed-length "
                  "--ignore-eos completions, the throughput's workload): acceptance length per verify step · "
                  "tokens per target pass over every decode pass (drafted share): a drafter that skips passes "
                  "(ngram, suffix) gains less per pass than its length per verify step says.")
    console.print("answers = the task's acceptance requests and how many distinct greedy answers they gave: the "
                  "effective sample behind the acceptance figures and the output equality.")
    console.print("cross-check: indep. = independent, a per-request figure from the responses against a /metrics "
                  "delta; compl. = completeness, bench's answer and token counts against the server's; same-ctr = "
                  "bench's spec_decode_* fields, which bench read from the same /metrics itself; internal = /metrics "
                  "against itself; 0=0 = trivial; warm-up = the warm-up window, no measured request.")
    if any(stalled_concurrencies(s, t) for s in summaries.values() for t in s.task_figures):
        console.print("⚠ = a repeat of this cell or of its baseline's stalled (bench's per-request data: a pause in "
                      "sending, a TTFT/E2EL outlier, or slower than c=1 one after another): the figure and its "
                      "ratio rest on a stall (report.md: the speed table's note names it).")
    repeats = max((len(v) for s in summaries.values() for t in s.task_figures.values()
                   for v in _cells_by_concurrency(t).values()), default=0)
    if repeats < MIN_REPEATS:
        console.print(f"(× base) are point estimates from {repeats} repeat(s), with no interval under {MIN_REPEATS}: "
                      "they say nothing about how much a ratio moves from run to run (report.md: verdicts, "
                      "--repeats 3 --replicate sessions for intervals that count).")
    if run.findings:
        console.print(f"[bold red]{shown.FLAG} {shown.HEADING}[/] ({len(run.findings)} figure(s)):")
        for finding in run.findings:
            console.print(f"[red]  {escape(shown.line(finding))}[/]")
        console.print(shown.NOTE)
    for f in failed:
        where = f" ({f.path.name}/)" if f.path else ""
        console.print(f"[red]{f.name}: failed{where}[/]: {f.error}")
