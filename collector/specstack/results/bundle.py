"""The writer of a run's bundle: results/<run-id>/manifest.json and results/<run-id>/<method>/.

A method's files go to a staging folder that becomes `<method>/` only when the run succeeded; a failed run
becomes `<method>.failed-<time>/`, so it never overwrites (or looks like) a good result. The one reader of
what is written here is `results.reader`; both share the schema names below. A summary is written only here:
staged with its folder (MethodBundle.write_summary), and rewritten in place after publication by
rewrite_summary (Prometheus's view, checked in the background by runs/monitoring.py); both take the typed record
(results/summary.py) and write its JSON.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from specstack.errors import UserError
from specstack.results import layout
from specstack.results.files import atomic_write_json, atomic_write_text, folder_locked, fsync_dir
from specstack.results.layout import SAMPLER_PROBE_FILE as SAMPLER_PROBE_FILE, SUMMARY_FILE   # re-exported

if TYPE_CHECKING:   # host/ (the host's plain python3) imports this module: the standard-library-only list stays
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
            raise UserError(f"{self.final} already holds a result for run {run_id!r}; choose another --run-id "
                            "or pass --force to replace it")
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.staging = Path(tempfile.mkdtemp(prefix=f".{method}.staging-", dir=self.run_dir))

    def path(self, rel: str) -> Path:
        p = self.staging / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        return p

    def write_json(self, rel: str, obj) -> Path:
        return atomic_write_json(self.path(rel), obj)

    def write_text(self, rel: str, text: str) -> Path:
        return atomic_write_text(self.path(rel), text)

    def write_summary(self, summary: Summary) -> Path:
        return self.write_json(SUMMARY_FILE, summary.to_json())

    def finalize(self, ok: bool) -> Path:
        """Publish the staged folder: as `<method>/` if ok, else as `<method>.failed-<time>/`."""
        stamp = time.strftime("%Y%m%dT%H%M%S")
        if ok:
            if self.final.exists():  # only with --force: keep the old one beside, never delete it
                os.replace(self.final, self.run_dir / layout.replaced_dir(self.method, stamp))
            target = self.final
        else:
            target = self.run_dir / layout.failed_dir(self.method, stamp)
        os.replace(self.staging, target)
        fsync_dir(self.run_dir)
        return target

    def discard(self) -> None:
        shutil.rmtree(self.staging, ignore_errors=True)


def rewrite_summary(method_dir: Path, summary: Summary) -> Path:
    """Replace the summary of a method folder already published, atomically (a reader sees the old file or the
    new one, never half of either): for what is learned after publication."""
    return atomic_write_json(Path(method_dir) / SUMMARY_FILE, summary.to_json())


def update_manifest(run_dir: Path, **fields) -> dict:
    """Read-modify-write the run manifest under the run folder's lock (concurrent writers are safe). The
    `methods` map is merged (a method's entry key by key), every other field is replaced."""
    run_dir = Path(run_dir)
    path = run_dir / layout.MANIFEST
    with folder_locked(run_dir):   # parallel collectors update one manifest
        manifest: dict[str, Any] = (json.loads(path.read_text()) if path.exists()
                                    else {"schema": MANIFEST_SCHEMA, "methods": {}})
        methods = fields.pop("methods", None) or {}
        manifest.update(fields)
        for name, entry in methods.items():
            manifest.setdefault("methods", {}).setdefault(name, {}).update(entry)
        atomic_write_json(path, manifest)
    return manifest
