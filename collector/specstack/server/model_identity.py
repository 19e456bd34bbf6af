"""Which checkpoints a native server read, in a form another run can be checked against (`specstack reproduce`
refuses to re-run on other weights unless --allow-drift).

- A local folder: a fingerprint of its files. Files up to FULL_HASH_BYTES are hashed whole (configs, tokenizer,
  the tiny test models); larger ones (an 8B model's shards) by size and the sha256 of their first and last MiB,
  so a GPU host does not read 16 GB before every run. A re-download or an edited config changes it; two
  shards differing only in their middle would not, and the record says "sampled" when that applies.
- A hub id: the commit of the cached snapshot (the cache folder is named by it), or the pinned revision.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING

from specstack.server.model_source import cached_snapshot, looks_local
from specstack.server.preflight import model_refs

if TYPE_CHECKING:
    from specstack.config.methods import ServePlan

FULL_HASH_BYTES = 64 << 20
_EDGE = 1 << 20


def _file_digest(path: Path, size: int) -> tuple[str, bool]:
    """(sha256, sampled)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        if size <= FULL_HASH_BYTES:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
            return h.hexdigest(), False
        h.update(f.read(_EDGE))
        f.seek(size - _EDGE)
        h.update(f.read(_EDGE))
    return h.hexdigest(), True


def folder_fingerprint(folder: Path) -> dict:
    """sha256 over (relative path, size, content digest) of every file, in path order; hidden files (caches,
    locks) left out."""
    total, sampled, files = hashlib.sha256(), False, 0
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        rel = path.relative_to(folder)
        if any(part.startswith(".") for part in rel.parts):
            continue
        size = path.stat().st_size
        digest, was_sampled = _file_digest(path, size)
        sampled |= was_sampled
        files += 1
        total.update(f"{rel.as_posix()}\0{size}\0{digest}\n".encode())
    return {"sha256": total.hexdigest(), "files": files, "sampled": sampled}


def hub_revision(model: str, revision: str | None) -> str | None:
    """The commit of the cached snapshot the server would load (None when not cached)."""
    snapshot = cached_snapshot(model, revision)
    return snapshot.name if snapshot is not None else None


def identity(model: str, revision: str | None = None) -> dict:
    if looks_local(model):
        folder = Path(model).expanduser()
        if not folder.is_dir():
            return {"model": model, "kind": "local", "fingerprint": None}
        return {"model": model, "kind": "local", "fingerprint": folder_fingerprint(folder)}
    return {"model": model, "kind": "hub", "revision": hub_revision(model, revision) or revision, "pinned": revision}


def of_plan(plan: ServePlan) -> dict[str, dict]:
    """role ("target", "speculative") -> identity, for every checkpoint the plan's server reads."""
    return {role: identity(model, revision) for role, model, revision in model_refs(plan)}
