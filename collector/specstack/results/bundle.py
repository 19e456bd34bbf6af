"""The writer of a run's bundle: results/<run-id>/manifest.json and results/<run-id>/<method>/.

A method's files go to a staging folder that becomes `<method>/` only when the run succeeded; a failed run
becomes `<method>.failed-<time>/`, so it never overwrites (or looks like) a good result. The one reader of
what is written here is `results.reader`; both share the schema names below. A summary is written only here:
staged with its folder (MethodBundle.write_summary), and rewritten in place after publication by
rewrite_summary (Prometheus's view, checked in the background by runs/monitoring.py); both take the typed record
(results/summary.py) and write its JSON.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from specstack.errors import UserError
from specstack.results import layout
from specstack.results.files import atomic_write_json, atomic_write_text, folder_locked, fsync_dir
from specstack.results.layout import SAMPLER_PROBE_FILE as SAMPLER_PROBE_FILE  # re-exported
from specstack.results.layout import SUMMARY_FILE

if TYPE_CHECKING:  # host/ (the host's plain python3) imports this module: the standard-library-only list stays
    from specstack.results.summary import Summary

SUMMARY_SCHEMA = "specstack.summary/3"
MANIFEST_SCHEMA = "specstack.manifest/1"


class MethodBundle:
    """The folder of one method of one run, staged until finalize()."""

    def __init__(self, results_dir: Path, run_id: str, method: str, *, force: bool = False):
        self.run_dir = Path(results_dir) / run_id
        self.method = method
        self.final = self.run_dir / method
        if self.final.exists() and not force:
            raise UserError(
                f"{self.final} already holds a result for run {run_id!r}; choose another --run-id "
                "or pass --force to replace it"
            )
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.staging = Path(tempfile.mkdtemp(prefix=layout.staging_prefix(method), dir=self.run_dir))
        # held while this process lives: a staging folder nobody holds was left by a killed run (keep_dead_staging)
        self._alive: int | None = _hold(self.staging)
        self.published: Path | None = None

    def path(self, rel: str) -> Path:
        p = self.staging / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        return p

    def write_json(self, rel: str, obj: object) -> Path:
        return atomic_write_json(self.path(rel), obj)

    def write_text(self, rel: str, text: str) -> Path:
        return atomic_write_text(self.path(rel), text)

    def write_summary(self, summary: Summary) -> dict[str, Any]:
        """The summary's JSON, written into the staged folder and returned (what a method run hands back)."""
        data = summary.to_json()
        self.write_json(SUMMARY_FILE, data)
        return data

    def finalize(self, ok: bool) -> Path:
        """Publish the staged folder: as `<method>/` if ok, else as `<method>.failed-<time>/`."""
        if ok:
            if self.final.exists():  # only with --force: keep the old one beside, never delete it
                os.replace(self.final, _unused(self.run_dir, layout.replaced_dir, self.method))
            target = self.final
        else:
            target = _unused(self.run_dir, layout.failed_dir, self.method)
        os.replace(self.staging, target)
        self.published = target
        self._let_go()
        fsync_dir(self.run_dir)
        return target

    def demote(self) -> Path:
        """A folder published as `<method>/` whose publication then broke: kept as failed instead."""
        assert self.published is not None
        if self.published == self.final:
            self.published = _unused(self.run_dir, layout.failed_dir, self.method)
            os.replace(self.final, self.published)
        return self.published

    def discard(self) -> None:
        shutil.rmtree(self.staging, ignore_errors=True)
        self._let_go()

    def _let_go(self) -> None:
        if self._alive is not None:
            os.close(self._alive)
            self._alive = None


def _hold(folder: Path) -> int | None:
    """An exclusive flock on the folder, None where the file system has none (the folder then never reads as
    dead). O_CLOEXEC: no server or client this process starts inherits it."""
    fd = os.open(folder, os.O_RDONLY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def _unused(run_dir: Path, name_of: Callable[[str, str], str], method: str) -> Path:
    """`name_of(method, <now>)` in the run folder, with a suffix if a folder of that second exists."""
    stamp = time.strftime("%Y%m%dT%H%M%S")
    target, n = run_dir / name_of(method, stamp), 1
    while target.exists():
        n += 1
        target = run_dir / name_of(method, f"{stamp}-{n}")
    return target


KILLED = "the harness was killed (no clean exit); rerun the same command to run it again"


def keep_dead_staging(run_dir: Path) -> list[Path]:
    """Each staging folder a killed run left (no live process holds it) becomes `<method>.failed-<time>/` with the
    cause and the manifest's entry `failed`, so nothing half-written stays hidden; a live one is left alone. Its
    summary, if the run got that far, keeps what it said, but never "ok"."""
    run_dir = Path(run_dir)
    kept = []
    for folder in sorted(run_dir.iterdir()) if run_dir.is_dir() else []:
        method = layout.staged_method(folder.name)
        if method is None or not folder.is_dir():
            continue
        try:
            fd = _hold(folder)
        except OSError:  # published or removed by its live run meanwhile
            continue
        if fd is None:
            continue
        try:
            kept.append(_keep_as_failed(run_dir, folder, method))
        finally:
            os.close(fd)
    return kept


def _keep_as_failed(run_dir: Path, staging: Path, method: str) -> Path:
    path = staging / SUMMARY_FILE
    try:
        summary = json.loads(path.read_text())
    except (OSError, ValueError):
        summary = {"schema": SUMMARY_SCHEMA, "run_id": run_dir.name, "method": method}
    before = summary.get("error")
    summary.update(status="failed", error_type="Killed", error=KILLED + (f" (it had said: {before})" if before else ""))
    atomic_write_json(path, summary)
    target = _unused(run_dir, layout.failed_dir, method)
    os.replace(staging, target)
    fsync_dir(run_dir)
    entry = (read_manifest_methods(run_dir)).get(method) or {}
    if not (entry.get("status") == "ok" and (run_dir / (entry.get("dir") or method)).is_dir()):
        update_manifest(run_dir, methods={method: {"status": "failed", "dir": target.name, "error": summary["error"]}})
    return target


def read_manifest_methods(run_dir: Path) -> dict[str, Any]:
    path = Path(run_dir) / layout.MANIFEST
    try:
        return json.loads(path.read_text()).get("methods") or {}
    except (OSError, ValueError):
        return {}


def rewrite_summary(method_dir: Path, summary: Summary) -> Path:
    """Replace the summary of a method folder already published, atomically (a reader sees the old file or the
    new one, never half of either): for what is learned after publication."""
    return atomic_write_json(Path(method_dir) / SUMMARY_FILE, summary.to_json())


def update_manifest(run_dir: Path, **fields: Any) -> dict[str, Any]:
    """Read-modify-write the run manifest under the run folder's lock (concurrent writers are safe). The
    `methods` map is merged (a method's entry key by key), every other field is replaced."""
    run_dir = Path(run_dir)
    path = run_dir / layout.MANIFEST
    with folder_locked(run_dir):  # parallel collectors update one manifest
        manifest: dict[str, Any] = (
            json.loads(path.read_text()) if path.exists() else {"schema": MANIFEST_SCHEMA, "methods": {}}
        )
        methods = fields.pop("methods", None) or {}
        manifest.update(fields)
        for name, entry in methods.items():
            manifest.setdefault("methods", {}).setdefault(name, {}).update(entry)
        atomic_write_json(path, manifest)
    return manifest
