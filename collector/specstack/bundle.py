"""Results bundle: results/<run-id>/manifest.json and results/<run-id>/<method>/.

Every file is written atomically (temp name, fsync, rename). A method's files go to a staging folder
that becomes `<method>/` only when the run succeeded; a failed run becomes `<method>.failed-<time>/`,
so it never overwrites (or looks like) a good result.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

from .errors import UserError

SUMMARY_SCHEMA = "specstack.summary/1"
MANIFEST_SCHEMA = "specstack.manifest/1"


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_writer(path: Path):
    """A binary file that appears at `path` (fsynced, renamed) only when the block ends without error;
    lets long phases stream their records to disk instead of holding them in memory."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o644)  # mkstemp makes 0600; results (and Prometheus target files) are read by others
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def atomic_write_bytes(path: Path, data: bytes) -> Path:
    with atomic_writer(path) as f:
        f.write(data)
    return Path(path)


def atomic_write_text(path: Path, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: Path, obj) -> Path:
    return atomic_write_text(path, json.dumps(obj, indent=2, ensure_ascii=False, default=str) + "\n")


def check_writable(folder: Path) -> None:
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=folder, prefix=".write-test-", delete=True)
        probe.close()
    except OSError as e:
        raise UserError(f"results folder {folder} is not writable ({e.strerror}); pass --results DIR "
                        "pointing at a writable folder") from None


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

    def finalize(self, ok: bool) -> Path:
        """Publish the staged folder: as `<method>/` if ok, else as `<method>.failed-<time>/`."""
        stamp = time.strftime("%Y%m%dT%H%M%S")
        if ok:
            if self.final.exists():  # only with --force: keep the old one beside, never delete it
                os.replace(self.final, self.run_dir / f"{self.method}.replaced-{stamp}")
            target = self.final
        else:
            target = self.run_dir / f"{self.method}.failed-{stamp}"
        os.replace(self.staging, target)
        _fsync_dir(self.run_dir)
        return target

    def discard(self) -> None:
        shutil.rmtree(self.staging, ignore_errors=True)


def update_manifest(run_dir: Path, **fields) -> dict:
    """Read-modify-write the run manifest (one writer per run); nested `methods` entries are merged."""
    path = Path(run_dir) / "manifest.json"
    manifest = json.loads(path.read_text()) if path.exists() else {"schema": MANIFEST_SCHEMA, "methods": {}}
    methods = fields.pop("methods", None)
    manifest.update(fields)
    if methods:
        manifest.setdefault("methods", {}).update(methods)
    atomic_write_json(path, manifest)
    return manifest


def read_summary(method_dir: Path) -> dict | None:
    path = Path(method_dir) / "summary.json"
    return json.loads(path.read_text()) if path.exists() else None
