"""Atomic files: a result appears whole (temp name, fsync, rename, folder fsync) or not at all, so a crash or
a full disk never leaves a half-written summary, record file or Prometheus target file behind."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from specstack.errors import UserError


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_writer(path: Path) -> Iterator[BinaryIO]:
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
    fsync_dir(path.parent)


def atomic_write_bytes(path: Path, data: bytes) -> Path:
    with atomic_writer(path) as f:
        f.write(data)
    return Path(path)


def atomic_write_text(path: Path, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: Path, obj: object) -> Path:
    return atomic_write_text(path, json.dumps(obj, indent=2, ensure_ascii=False, default=str) + "\n")


FULL = (errno.ENOSPC, errno.EDQUOT)  # the disk (or the user's quota) is full


def unwritable_message(folder: Path, e: OSError) -> str:
    """What a user does about a results folder that cannot be written: one line naming the fix."""
    if e.errno in FULL:
        return (
            f"the disk holding {folder} is full ({e.strerror}); free space there, or pass --results DIR on a "
            "disk with room, then rerun the same command"
        )
    return f"results folder {folder} is not writable ({e.strerror}); pass --results DIR pointing at a writable folder"


def check_writable(folder: Path) -> None:
    """The folder takes a file (a byte written and synced: a full disk says so here, not minutes into a run)."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".write-test-", delete=True) as probe:
            probe.write(b"x")
            probe.flush()
            os.fsync(probe.fileno())
    except OSError as e:
        raise UserError(unwritable_message(folder, e)) from None


@contextlib.contextmanager
def folder_locked(folder: Path) -> Iterator[None]:
    """An exclusive flock on a folder itself (made if missing; no lock file left in it): parallel writers (make
    sweep GPUS=..., each collector its own container on one bind mount; two Slurm submits of one run) take turns."""
    Path(folder).mkdir(parents=True, exist_ok=True)
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the last descriptor releases the lock
