"""The one reader of a run's bundle: which folder holds a method's result, and what its summary says.

Used by everything that reads results: the report, the console table and a sweep's resume. It applies one
rule set: `<method>/` with status ok is the method's result; `<method>.failed-<time>/` is a failed attempt,
listed, never used as data; `<method>.replaced-<time>/` (kept by --force) is ignored; dot folders are staging.

Summaries carry `schema: specstack.summary/<version>`. A known older version is migrated on read (the file on
disk is left as it is); an unknown version is refused with an error naming the fix, never guessed at.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specstack.errors import UserError
from specstack.figures import recompute
from specstack.results import layout
from specstack.results.bundle import MANIFEST_SCHEMA, SUMMARY_SCHEMA
from specstack.results.layout import SUMMARY_FILE
from specstack.results.records import read_records
from specstack.results.summary import BenchCell, CrossCheck, Replication, Summary, TaskFigures, Window

_SUMMARY_PREFIX = SUMMARY_SCHEMA.rsplit("/", 1)[0] + "/"


def _to_v2(summary: dict[str, Any]) -> dict[str, Any]:
    """summary/1 -> /2: Prometheus's view became a deferred check with a status of its own (a run stopped
    before the check leaves "pending"); the first-scrape wait it replaced (`prometheus_wait`) is gone."""
    view = summary.get("prometheus_view")
    summary["prometheus_view"] = {"status": "not collected", "tasks": {}} if not view else {"status": "checked", **view}
    summary.pop("prometheus_wait", None)
    return summary


def _to_v3(summary: dict[str, Any]) -> dict[str, Any]:
    """summary/2 -> /3: the replication design the figures rest on is recorded; everything before ran its
    repeats back to back in one server session. (/3 also adds the conditional per-position rates, absent = n/a.)"""
    repeats = max(
        (
            len([c for c in t.get("bench") or [] if c.get("concurrency") == conc])
            for t in (summary.get("tasks") or {}).values()
            for conc in {c.get("concurrency") for c in t.get("bench") or []}
        ),
        default=0,
    )
    summary.setdefault("replication", {"design": "repeats", "repeats": repeats or None})
    return summary


# version read -> the step that lifts it one version; applied in order up to the current one
MIGRATIONS = {1: _to_v2, 2: _to_v3}
CURRENT_VERSION = int(SUMMARY_SCHEMA.rsplit("/", 1)[1])


class SchemaError(UserError):
    """A summary this specstack cannot read."""


def summary_version(summary: dict[str, Any], where: Path) -> int:
    schema = summary.get("schema")
    if not isinstance(schema, str) or not schema.startswith(_SUMMARY_PREFIX):
        raise SchemaError(
            f"{where} is not a specstack summary (schema {schema!r}); expected "
            f"{SUMMARY_SCHEMA!r}. Point the command at a run folder written by `specstack run`."
        )
    try:
        return int(schema[len(_SUMMARY_PREFIX) :])
    except ValueError:
        raise SchemaError(f"{where}: unreadable schema version in {schema!r}") from None


def migrate(summary: dict[str, Any], where: Path) -> dict[str, Any]:
    version = summary_version(summary, where)
    if version > CURRENT_VERSION or (version < CURRENT_VERSION and version not in MIGRATIONS):
        raise SchemaError(
            f"{where} has schema {summary['schema']!r}; this specstack reads up to "
            f"{SUMMARY_SCHEMA!r}. Read it with the specstack that wrote it (its git commit is in "
            "the run's manifest.json), or upgrade specstack."
        )
    while version < CURRENT_VERSION:
        summary = MIGRATIONS[version](summary)
        version += 1
    summary["schema"] = SUMMARY_SCHEMA
    return summary


def read_summary(method_dir: Path) -> dict[str, Any] | None:
    """A method folder's summary at the current schema version; None when the folder has none."""
    path = Path(method_dir) / SUMMARY_FILE
    if not path.exists():
        return None
    try:
        summary = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise SchemaError(
            f"{path} is not valid JSON ({e.msg}); it was not written by specstack's atomic "
            "writer, or was edited by hand: restore it or move the folder out of the run"
        ) from None
    return migrate(summary, path)


def closed_loop(cell: dict[str, Any]) -> bool:
    """A closed-loop bench cell as JSON (BenchCell.closed_loop)."""
    return BenchCell.from_json(cell).closed_loop


def load_text(cell: Mapping[str, Any]) -> str:
    """A bench cell's load as JSON in a few characters (BenchCell.load_text)."""
    return BenchCell.from_json(cell).load_text


def read_manifest(run_dir: Path) -> dict[str, Any]:
    path = Path(run_dir) / layout.MANIFEST
    if not path.exists():
        return {}
    manifest: dict[str, Any] = json.loads(path.read_text())
    if manifest.get("schema", MANIFEST_SCHEMA) != MANIFEST_SCHEMA:
        raise SchemaError(
            f"{path} has schema {manifest.get('schema')!r}; this specstack reads "
            f"{MANIFEST_SCHEMA!r}. Read it with the specstack that wrote it, or upgrade specstack."
        )
    return manifest


EAGER_MARK = " [eager smoke]"
EAGER_NOTE = (
    "eager smoke run: served without torch.compile and CUDA graphs, so its "
    "speed and start-up figures are not those of compile mode, the GPU default"
)


def display_name(method: str, summary: dict[str, Any] | Summary) -> str:
    """The method's label from methods.toml where it has one ("suffix (prompt trees only)"), so a table never
    shows a configuration under a bare name that overstates it; a label always starts with the method's name
    (tests/config), and a variant such as a K-sweep member keeps its own name. A method served in the GPU's eager
    smoke mode carries EAGER_MARK wherever its name is shown."""
    record = summary if isinstance(summary, Summary) else Summary.from_json(summary)
    label = record.label
    name = label if label and label.startswith(method + " ") else method
    return name + (EAGER_MARK if record.server is not None and record.server.eager_smoke else "")


@dataclass
class MethodData:
    """A method's result: its summary as read (migrated to the current version) and as typed records.

    `record` is the typed summary (results/summary.py), parsed from `summary` once; the readers read it. `summary`
    is the same JSON as a dict, for tests that build one by hand; nothing changes either after construction.
    `findings`: the figures its summary.json stated otherwise than its sums and request records give
    (figures/recompute.py); `summary` and `record` then hold the recomputed figures (load_run, checked)."""

    name: str  # folder name = summary["method"]
    path: Path
    summary: dict[str, Any]
    record: Summary = field(init=False, repr=False, compare=False)
    findings: list[recompute.Finding] = field(default_factory=list, compare=False)

    def __post_init__(self) -> None:
        self.record = Summary.from_json(self.summary)

    @property
    def baseline(self) -> str | None:
        return self.record.baseline_method

    def bench_file(self, file: str) -> dict[str, Any] | None:
        """A bench cell's `vllm bench serve` result (`file` as the cell names it, relative to this folder; a merged
        session's cell names its own folder, ../<method>-s<i>/bench/…); None where it is gone or unreadable."""
        try:
            result: dict[str, Any] = json.loads((self.path / file).read_text())
            return result
        except (OSError, ValueError):
            return None

    @property
    def display_name(self) -> str:
        return display_name(self.name, self.record)

    @property
    def speculative(self) -> bool:
        return self.record.speculative_config is not None

    @property
    def comparable(self) -> bool:
        return self.record.comparable is not False

    @property
    def server_contradictions(self) -> list[str]:
        """What an attached server showed against the method asked for, in a run measured anyway
        (--trust-server, runs/method_run.py); [] for every other run."""
        return list((self.record.server_contradictions or {}).get("found") or [])

    @property
    def contradiction_warning(self) -> str | None:
        """The one line report and compare show for such a run: its figures are the server's, not the method's."""
        found = self.server_contradictions
        if not found:
            return None
        how = "with --trust-server " if (self.record.server_contradictions or {}).get("trusted") else ""
        return (
            f"⚠ {self.display_name}: measured {how}although the server contradicted the method: "
            f"{'; '.join(found)}. Its figures are what that server ran, not what {self.name} asks for."
        )

    @property
    def k(self) -> int | None:
        return (self.record.speculative_config or {}).get("num_speculative_tokens")

    @property
    def tasks(self) -> dict[str, Any]:
        """Task -> its figures as JSON (task_figures: as records)."""
        return self.summary.get("tasks") or {}

    @property
    def task_figures(self) -> dict[str, TaskFigures]:
        return self.record.task_figures

    def finding(self, task: str, figure: str, phase: str = "greedy") -> recompute.Finding | None:
        """The finding on one figure of one phase of a task (None: summary.json states what it rests on)."""
        return next((f for f in self.findings if (f.task, f.phase, f.figure) == (task, phase, figure)), None)

    def figures(self, task: str) -> TaskFigures:
        """A task's figures; an empty record (every figure None) where the method has none for the task."""
        return self.record.task_figures.get(task) or TaskFigures.from_json({})

    @property
    def replication(self) -> Replication:
        """The design its figures rest on ("repeats" where the summary records none)."""
        return self.record.replication or Replication.from_json({"design": "repeats"})

    @property
    def folders(self) -> list[str]:
        """The folders its figures come from: one, or one per server session."""
        return self.replication.folders or [self.path.name]


@dataclass
class FailedRun:
    name: str
    path: Path | None
    error: str | None
    superseded: bool = False  # a successful result of the same method exists beside it


@dataclass
class RunData:
    run_dir: Path
    manifest: dict[str, Any]
    methods: dict[str, MethodData]
    failed: list[FailedRun]
    warnings: list[str] = field(default_factory=list)

    @property
    def eager_smoke(self) -> list[str]:
        """The methods served in the GPU's eager smoke mode (Server.eager_smoke): every figure says so."""
        return [name for name, md in self.methods.items() if md.record.server and md.record.server.eager_smoke]

    @property
    def findings(self) -> list[recompute.Finding]:
        """Every figure a method's summary.json stated otherwise than its sums and records give (shown recomputed)."""
        return [f for md in self.methods.values() for f in md.findings]

    @property
    def tasks(self) -> list[str]:
        seen = {t for m in self.methods.values() for t in m.tasks}
        order = list((self.manifest.get("workload") or {}).get("tasks") or [])
        return [t for t in order if t in seen] + sorted(seen - set(order))


def resolve_run_dir(arg: str | Path, results_dir: Path | None = None) -> Path:
    """A run folder given directly, or a run id under --results (default: $SPECSTACK_RESULTS or results/)."""
    p = Path(arg)
    if p.is_dir() and ((p / layout.MANIFEST).exists() or any(p.glob(f"*/{SUMMARY_FILE}"))):
        return p
    base = Path(results_dir or os.environ.get("SPECSTACK_RESULTS", "results"))
    q = base / str(arg)
    if q.is_dir():
        return q
    raise UserError(
        f"no run folder {p} and no run {str(arg)!r} under {base}; pass the run folder or --results DIR with the run id"
    )


def good_result(run_dir: Path, method: str) -> dict[str, Any] | None:
    """The method's published successful summary in this run, if any: what a resumed sweep skips."""
    summary = read_summary(Path(run_dir) / method)
    return summary if summary is not None and summary.get("status") == "ok" else None


def _method_folders(run_dir: Path) -> list[Path]:
    return sorted(
        p
        for p in run_dir.iterdir()
        if p.is_dir()
        and not p.name.startswith(".")
        and p.name not in layout.NOT_METHODS
        and layout.REPLACED_MARK not in p.name
    )


def _scan(run_dir: Path) -> tuple[dict[str, MethodData], list[FailedRun]]:
    methods: dict[str, MethodData] = {}
    failed: list[FailedRun] = []
    for d in _method_folders(run_dir):
        summary = read_summary(d)
        if summary is None:
            continue
        if layout.FAILED_MARK in d.name:
            failed.append(
                FailedRun(summary.get("method") or d.name.split(layout.FAILED_MARK)[0], d, summary.get("error"))
            )
        elif summary.get("status") != "ok":
            failed.append(FailedRun(d.name, d, summary.get("error") or f"status {summary.get('status')!r}"))
        else:
            methods[d.name] = MethodData(d.name, d, summary)
    for f in failed:
        f.superseded = f.name in methods
    return methods, failed


def _session_of(md: MethodData) -> str | None:
    rep = md.record.replication
    return rep.of if rep is not None and rep.design == "sessions" else None


def _session(md: MethodData) -> int | None:
    return md.record.replication.session if md.record.replication else None


def merge_sessions(methods: dict[str, MethodData]) -> dict[str, MethodData]:
    """The server sessions of one method (`<method>-s<i>/`, --replicate sessions) read as one method whose bench
    repeats are its sessions: cell `repeat` = session - 1, its file found through the session's folder. The
    acceptance phase (greedy, the same answers in every session) is the first session's; the cross-check holds
    only if it held in every session."""
    out: dict[str, MethodData] = {}
    groups: dict[str, list[MethodData]] = {}
    for name, md in methods.items():
        of = _session_of(md)
        if of is None:
            out[name] = md
        else:
            groups.setdefault(of, []).append(md)
    for of, sessions in groups.items():
        sessions.sort(key=lambda md: _session(md) or 0)
        first = sessions[0].record
        cells: dict[str, list[BenchCell]] = {t: [] for t in first.task_figures}
        windows: list[Window] = []
        checks, ok = 0, True
        for md in sessions:
            index = (_session(md) or 1) - 1
            for task, figures in md.task_figures.items():
                if figures.cells:
                    cells.setdefault(task, []).extend(
                        cell.but(repeat=index, session=index + 1, file=f"../{md.path.name}/{cell.file}")
                        for cell in figures.cells
                    )
            windows += [
                w.but(repeat=index, session=index + 1) if w.phase == "bench" else w for w in md.record.window_list
            ]
            cc = md.record.crosscheck or CrossCheck.from_json({})
            checks += cc.checks or 0
            ok = ok and bool(cc.ok)
        tasks = {t: first.task_figures.get(t, TaskFigures.from_json({})).but(bench=c) for t, c in cells.items()}
        # a summary without tasks (none, or null) keeps them as read unless a session has cells to merge in
        merged = first.but(
            method=of,
            **({"tasks": tasks} if first.tasks is not None or tasks else {}),
            windows=windows,
            replication=(first.replication or Replication.from_json({})).but(
                session=None, sessions_ok=len(sessions), folders=[md.path.name for md in sessions]
            ),
            crosscheck=(first.crosscheck or CrossCheck.from_json({})).but(ok=ok, checks=checks),
        )
        out[of] = MethodData(of, sessions[0].path, json.loads(json.dumps(merged.to_json())))
    return out


def checked(md: MethodData) -> MethodData:
    """The method with every acceptance figure recomputed from its request records (else its summary's own sums),
    every bench cell's copied figures read again from its bench file, and, where summary.json stated one otherwise
    or lost it, its findings (figures/recompute.py): a hand-edited summary never reaches a table as it was edited."""

    def records(name: str) -> list[dict[str, Any]] | None:
        path = md.path / name
        return read_records(path) if path.exists() else None

    record, findings = recompute.check_summary(md.name, md.record, records, md.bench_file)
    if not findings:
        return md
    return MethodData(md.name, md.path, record.to_json(), findings=findings)


def load_run(run_dir: Path) -> RunData:
    """Every method result of a run, baselines first, with the failed attempts and what does not add up."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise UserError(f"{run_dir} is not a run folder; pass results/<run-id>")
    manifest = read_manifest(run_dir)
    methods, failed = _scan(run_dir)
    order = list(manifest.get("methods") or {})
    methods = {name: checked(md) for name, md in merge_sessions(methods).items()}
    folders = {f for md in methods.values() for f in md.folders}
    order = [next((n for n, md in methods.items() if name in md.folders), name) for name in order]
    methods = _grouped(methods, list(dict.fromkeys(order)))
    warnings: list[str] = []
    for name, entry in (manifest.get("methods") or {}).items():
        if entry.get("status") == "ok":
            folder = entry.get("dir") or name
            if folder not in folders:
                warnings.append(
                    f"{name}: the manifest says ok but {run_dir / folder} has no good summary.json; left out"
                )
            continue
        if name in methods:
            warnings.append(
                f"{name}: the latest attempt failed ({entry.get('error')}); the report uses the "
                f"earlier successful result in {name}/"
            )
        elif not any(f.name == name for f in failed):
            # A parallel sweep records a method's slot when its server is up, before its collector's status.
            why = (
                f"status {entry.get('status')!r}"
                if "status" in entry
                else "no result yet: still running, or stopped before its collector wrote one"
            )
            failed.append(FailedRun(name, None, entry.get("error") or why))
    failed_names = {f.name for f in failed if not f.superseded}
    for md in methods.values():
        if md.baseline and md.baseline not in methods:
            why = "failed" if md.baseline in failed_names else "is not in this run"
            warnings.append(
                f"{md.name}: its baseline {md.baseline!r} {why}; no speed ratios and no output equality for it"
            )
    if not methods and not failed:
        raise UserError(f"{run_dir} holds no method results (no <method>/summary.json)")
    return RunData(run_dir, manifest, methods, failed, warnings)


def _grouped(methods: dict[str, MethodData], run_order: list[str]) -> dict[str, MethodData]:
    """Each baseline followed by the methods compared with it; run order (the manifest's) within a group."""

    def rank(name: str) -> tuple[int, str]:
        return (run_order.index(name) if name in run_order else len(run_order), name)

    out: dict[str, MethodData] = {}
    for base in sorted((n for n, m in methods.items() if not m.baseline), key=rank):
        out[base] = methods[base]
        for n in sorted((n for n, m in methods.items() if m.baseline == base), key=rank):
            out[n] = methods[n]
    for n in sorted((n for n in methods if n not in out), key=rank):  # their baseline is not in the run
        out[n] = methods[n]
    return out
