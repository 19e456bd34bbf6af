"""A method's summary figures recomputed from what they rest on, and every figure the summary states otherwise.

At run time measure/accounting.py summed each response's `metrics.speculative_decoding` of a phase's request
records (acceptance/<task>.jsonl, its turn-2 and sampled files) into the sums R, D, C, the histogram and the
drafted steps per position, derived the rates from them, and runs/method_summary.py named them in summary.json.
Here the same functions do it again: from the phase's records where the bundle has them (the sums too, and the
answers' counts of the greedy phase and turn 2), else from the summary's own sums. A figure summary.json states
otherwise, or lost, is a `Finding`; the corrected summary carries the recomputed figure, so every reader shows that one, flagged.

A bench cell's figures copied from its `vllm bench serve` result file (counts, throughputs, latencies, bench's
spec-decode figures: figures/bench_cell.py `copied`) are held against that file the same way (phase "bench c=4 r0").
What specstack derives from bench's per-request data (stalls, goodput) is not: its derivation may change between
versions, so a difference there would read as an edit where none was made (goodput is cross-checked at run time).

The checks are the rows of CHECKS (a name, and a test of the stated value against the recomputed one): what a
cell can physically be (#41) is another row, not another special case.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from specstack.figures import bench_cell
from specstack.measure import accounting
from specstack.measure.categories import CategorySums
from specstack.results import layout
from specstack.results.summary import Acceptance, BenchCell, Summary, TaskFigures


class _Marker:
    """A value that is no figure: printed by its name."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


UNKNOWN: Any = _Marker("UNKNOWN")  # neither the records nor the summary's sums can give the figure back
ABSENT: Any = _Marker("ABSENT")  # the key is not in summary.json
_A = TypeVar("_A", bound=Acceptance)

# summary key -> accounting.Acceptance.to_dict() name (runs/method_summary.py `_acceptance`; a test holds them equal)
ACCEPTANCE_NAMES = {
    "acceptance_rate": "acceptance_rate",
    "mean_acceptance_length": "mean_acceptance_length",
    "histogram": "histogram",
    "per_position": "per_position_rates",
    "per_position_conditional": "per_position_conditional_rates",
    "drafted_per_position": "drafted_per_position",
    "no_accept_share": "no_accept_share",
    "num_spec_steps": "steps",
    "num_draft_tokens": "draft_tokens",
    "num_accepted_draft_tokens": "accepted",
}
SUMS = ("num_spec_steps", "num_draft_tokens", "num_accepted_draft_tokens", "histogram", "drafted_per_position")
# a figure derived from the sums -> the sums it rests on
DERIVED = {
    "acceptance_rate": ("num_accepted_draft_tokens", "num_draft_tokens"),
    "mean_acceptance_length": ("num_accepted_draft_tokens", "num_spec_steps"),
    "per_position": ("histogram", "num_spec_steps"),
    "no_accept_share": ("histogram", "num_spec_steps"),
    "per_position_conditional": ("histogram", "num_spec_steps", "drafted_per_position"),
}
ANSWERS = ("requests", "completion_tokens", "finish_reasons")

# how a figure is written: a share (%), a number, a count, or a list/map of them
KIND = {
    "acceptance_rate": "share",
    "no_accept_share": "share",
    "per_position": "shares",
    "per_position_conditional": "shares",
    "mean_acceptance_length": "number",
    "histogram": "counts",
    "drafted_per_position": "counts",
    "finish_reasons": "counts",
    "num_spec_steps": "count",
    "num_draft_tokens": "count",
    "num_accepted_draft_tokens": "count",
    "requests": "count",
    "completion_tokens": "count",
    "completed": "count",
    "failed": "count",
    "total_input_tokens": "count",
    "total_output_tokens": "count",
    bench_cell.ACTIVE_IN_ONE_SECOND: "count",
    "duration": "number",
    "request_throughput": "number",
    "output_throughput": "number",
    "total_token_throughput": "number",
}


@dataclass(frozen=True)
class Finding:
    """One figure of one phase that summary.json states otherwise than what it rests on (or not at all)."""

    method: str
    task: str
    phase: str  # "greedy", "t0.6" (a sampled phase), "turn2"; a category: "greedy · writing"
    figure: str  # the summary key
    stated: Any  # as summary.json has it (ABSENT: the key is not there)
    recomputed: Any  # what is shown instead (None: n/a, no drafts; UNKNOWN: cannot be recomputed)
    source: str  # "records" (the phase's request records) or "sums" (the summary's own sums)
    check: str  # the CHECKS row that found it

    @property
    def unknown(self) -> bool:
        """Nothing to show: the figure is missing and cannot be recomputed ("missing", never "n/a")."""
        return self.recomputed is UNKNOWN


def _same(a: Any, b: Any) -> bool:
    """Equal as figures: floats to 1e-9 (a JSON round trip of the same sum), lists and maps element by element."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


@dataclass(frozen=True)
class Check:
    """A row of CHECKS: `finds(stated, recomputed)` says whether the stated value is a finding."""

    name: str
    finds: Callable[[Any, Any], bool]


def _missing(stated: Any, recomputed: Any) -> bool:
    """The key is gone, or null, where there is a figure (or nothing can tell whether there is one). A key
    absent where the figure is n/a loses nothing (a summary before /3 has no conditional rates)."""
    return (stated is ABSENT or stated is None) and recomputed is not None


def _differs(stated: Any, recomputed: Any) -> bool:
    return stated is not ABSENT and stated is not None and recomputed is not UNKNOWN and not _same(stated, recomputed)


CHECKS: tuple[Check, ...] = (
    Check("missing", _missing),  # deleted, or null where the sums or records say there were drafts
    Check("differs", _differs),  # a value other than what its sums / records give
)


def acceptance_figures(acc: accounting.Acceptance | None) -> dict[str, Any]:
    """The summary's acceptance keys from an accounting sum, as runs/method_summary.py `_acceptance` names them
    (every one None for a phase where no request carried metrics: plain decode)."""
    figures = acc.to_dict() if acc is not None else {}
    return {key: figures.get(name) for key, name in ACCEPTANCE_NAMES.items()}


def answers(records: list[dict[str, Any]]) -> dict[str, Any]:
    """requests, completion tokens and finish reasons of a phase's records (runs/method_summary.py `_answers`)."""
    reasons: dict[str, int] = {}
    for r in records:
        reasons[str(r["finish_reason"])] = reasons.get(str(r["finish_reason"]), 0) + 1
    return {
        "requests": len(records),
        "completion_tokens": sum(((r.get("usage") or {}).get("completion_tokens") or 0) for r in records),
        "finish_reasons": reasons,
    }


def from_records(records: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """(the phase's figures, category -> its figures) from its request records (results/records.py
    `request_fields`), summed as the run summed them (measure/chat.py `run_requests`, measure/categories.py)."""
    total = None
    categories = CategorySums()
    for r in records:
        total = accounting.add_request(total, r["spec"])
        categories.add(r.get("category"), r["spec"])
    split = (
        {
            name: {"requests": n, **acceptance_figures(categories.acceptance[name])}
            for name, n in categories.requests.items()
        }
        if categories.any_category
        else {}
    )
    return {**acceptance_figures(total), **answers(records)}, split


def _stated(f: Acceptance, key: str) -> Any:
    return ABSENT if key in f.absent else getattr(f, key)


def from_sums(f: Acceptance) -> dict[str, Any]:
    """The summary's own sums, and the figures derived from them; UNKNOWN where a sum is missing although
    something was drafted (deleted, or null) and for what rests on it. Nothing where the summary does not say
    whether anything was drafted (no num_draft_tokens key): nothing can be checked. drafted_per_position may be
    absent or null (summary-level metrics, or a summary before /3): the conditional rates are then n/a."""
    if "num_draft_tokens" in f.absent:
        return {}
    drafted = bool(f.num_draft_tokens)
    sums: dict[str, Any] = {}
    for key in SUMS:
        value = _stated(f, key)
        lost = value is ABSENT or value is None
        sums[key] = (UNKNOWN if drafted and key != "drafted_per_position" else None) if lost else value
    hist = f.histogram or []
    acc = accounting.Acceptance(
        steps=f.num_spec_steps or 0,
        draft_tokens=f.num_draft_tokens or 0,
        accepted=f.num_accepted_draft_tokens or 0,
        histogram=f.histogram,
        per_position=accounting.positions_from_histogram(hist) if hist else [],
        drafted_per_position=f.drafted_per_position,
    )
    figures = acceptance_figures(acc) if drafted else {}  # nothing drafted: every ratio n/a, never 0 %
    derived = {
        key: UNKNOWN if any(sums[i] is UNKNOWN for i in inputs) else figures.get(key) for key, inputs in DERIVED.items()
    }
    return {**sums, **derived}


def _compared(
    method: str, task: str, phase: str, f: _A, expected: dict[str, Any], source: str
) -> tuple[_A, list[Finding]]:
    """The record with each expected figure that differs put in (UNKNOWN ones left as stated), and the findings."""
    found = [
        Finding(method, task, phase, key, _stated(f, key), value, source, check.name)
        for key, value in expected.items()
        for check in CHECKS
        if check.finds(_stated(f, key), value)
    ]
    if not found:
        return f, []
    flagged = {x.figure for x in found}
    return f.but(**{k: v for k, v in expected.items() if k in flagged and v is not UNKNOWN}), found


def _phase(
    method: str, task: str, phase: str, f: _A, records: list[dict[str, Any]] | None, with_answers: bool = False
) -> tuple[_A, list[Finding]]:
    """One phase and its categories: from its records where the bundle has them, else from its own sums.
    with_answers: the summary keeps the phase's answers' counts (greedy, turn 2; a sampled phase does not)."""
    if records is not None:
        expected, split = from_records(records)
        if not with_answers:
            expected = {k: v for k, v in expected.items() if k not in ANSWERS}
        record, found = _compared(method, task, phase, f, expected, "records")
    elif ACCEPTANCE_NAMES.keys() <= f.absent:
        return f, []  # no acceptance phase stated at all (a task only a later server session benched)
    else:
        split = {}
        record, found = _compared(method, task, phase, f, from_sums(f), "sums")
    categories = {}
    for name, c in f.category_figures.items():
        where = f"{phase} · {name}"
        categories[name], more = (
            _compared(method, task, where, c, split[name], "records")
            if name in split
            else _compared(method, task, where, c, from_sums(c), "sums")
        )
        found += more
    if any(c is not f.category_figures[n] for n, c in categories.items()):
        record = record.but(categories=categories)
    return record, found


Records = Callable[
    [str], "list[dict[str, Any]] | None"
]  # a bundle path (results/layout.py) -> its records, None: no file
BenchFile = Callable[[str], "dict[str, Any] | None"]  # a cell's `file` -> bench's result JSON, None: no file


BENCH_FIELDS = frozenset(BenchCell.keys())  # the typed record's own figures; the rest are its `extra`


def _bench_stated(cell: BenchCell, key: str) -> Any:
    if key in BENCH_FIELDS:
        return ABSENT if key in cell.absent else getattr(cell, key)
    return cell.extra.get(key, ABSENT)


def _bench(method: str, task: str, cells: list[BenchCell], bench: BenchFile) -> tuple[list[BenchCell], list[Finding]]:
    """Each completed cell's copied figures held against its result file; the cells with the file's figures put
    in where they differ, and the findings. A cell that failed, or whose file is gone, is left as stated."""
    out, found = [], []
    for cell in cells:
        data = bench(cell.file) if cell.file and cell.status in (None, "ok") else None
        if not data:
            out.append(cell)
            continue
        phase = f"bench {cell.load_text} r{cell.repeat}" + (f" session {cell.session}" if cell.session else "")
        expected = bench_cell.copied(data)
        for key, former in bench_cell.FORMER_NAMES.items():  # an older summary: held against bench's own key
            if _bench_stated(cell, key) is ABSENT and former in cell.extra:
                expected[former] = data.get(former)
                del expected[key]
        stated = {key: _bench_stated(cell, key) for key in expected}
        here = [
            Finding(method, task, phase, key, stated[key], value, "bench file", check.name)
            for key, value in expected.items()
            for check in CHECKS
            if check.finds(stated[key], value)
        ]
        if here:
            fixed = {x.figure: x.recomputed for x in here}
            cell = cell.but(
                **{k: v for k, v in fixed.items() if k in BENCH_FIELDS},
                extra={**cell.extra, **{k: v for k, v in fixed.items() if k not in BENCH_FIELDS}},
            )
        out.append(cell)
        found += here
    return out, found


def check_summary(
    method: str, summary: Summary, records: Records, bench: BenchFile | None = None
) -> tuple[Summary, list[Finding]]:
    """The summary with every acceptance figure recomputed (greedy, each sampled phase, turn 2, their categories)
    and, with `bench`, every bench cell's copied figures read again from its file; the findings. The summary itself
    (unchanged) where there are none."""
    tasks: dict[str, TaskFigures] = {}
    found: list[Finding] = []
    for task, f in summary.task_figures.items():
        record, more = _phase(method, task, "greedy", f, records(layout.acceptance_records(task)), True)
        found += more
        if bench is not None and f.cells:
            cells, more = _bench(method, task, f.cells, bench)
            if more:
                record = record.but(bench=cells)
                found += more
        sampled = {}
        for key, s in (f.sampled or {}).items():
            ok = s.status in (None, "ok")  # a failed phase summed nothing: its records are not its figures
            rows = records(layout.sampled_records(task, s.temperature)) if ok and s.temperature is not None else None
            sampled[key], more = _phase(method, task, f"t{key}", s, rows)
            found += more
        if sampled:
            record = record.but(sampled=sampled)
        if f.turn2 is not None:
            t2 = f.turn2
            rows = records(layout.turn2_records(task)) if t2.status in (None, "ok") else None
            turn2, more = _phase(method, task, "turn2", t2, rows, True)
            found += more
            record = record.but(turns={**(f.turns or {}), "2": turn2})
        tasks[task] = record
    if not found:
        return summary, []
    return summary.but(tasks=tasks), found
