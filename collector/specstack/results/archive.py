"""A portable bundle: every run seals its folder with a checksum list at its end (`seal`), `pack` writes one tar.gz
of a run folder with that list inside it, `verify` checks an archive or a folder against its list and names every
file that changed, is missing or is extra.

The list is `SHA256SUMS` at the top of the run folder in the archive, in `sha256sum` format ("<hex>  <path>"),
so a receiving team can also check an unpacked copy with `sha256sum -c SHA256SUMS`. Paths are relative to the
run folder: nothing in the archive names the producing host's folders. The bundle is every regular file of the
run folder except dot paths (a run's staging folders and temporary files, which the reader never reads).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import tarfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, Any, TypeVar

from specstack.errors import UserError
from specstack.results.files import atomic_write_bytes, atomic_writer
from specstack.results.layout import SUMS

_CHUNK = 1 << 20


def _sha256(f: IO[bytes]) -> str:
    h = hashlib.sha256()
    for chunk in iter(lambda: f.read(_CHUNK), b""):
        h.update(chunk)
    return h.hexdigest()


def _in_bundle(rel: PurePosixPath) -> bool:
    return not any(part.startswith(".") for part in rel.parts) and rel.as_posix() != SUMS


def bundle_files(run_dir: Path) -> list[str]:
    """The run folder's files, relative, sorted; a symlink is refused (it would point into the producing host)."""
    out = []
    for p in sorted(Path(run_dir).rglob("*")):
        rel = PurePosixPath(p.relative_to(run_dir).as_posix())
        if not _in_bundle(rel):
            continue
        if p.is_symlink():
            raise UserError(
                f"{p} is a symlink; a portable bundle holds files only: replace it with the file it "
                "points to, or move it out of the run folder"
            )
        if p.is_file():
            out.append(rel.as_posix())
    return out


def checksums(run_dir: Path, files: list[str]) -> dict[str, str]:
    sums = {}
    for rel in files:
        with open(Path(run_dir) / rel, "rb") as f:
            sums[rel] = _sha256(f)
    return sums


def format_sums(sums: dict[str, str]) -> bytes:
    return "".join(f"{h}  {rel}\n" for rel, h in sorted(sums.items())).encode("utf-8")


def parse_sums(text: str, where: str) -> dict[str, str]:
    sums = {}
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        h, sep, rel = line.partition("  ")
        if not sep or len(h) != 64 or any(c not in "0123456789abcdef" for c in h):
            raise UserError(
                f'{where}:{n}: not a sha256sum line ("<64 hex>  <path>"); the checksum list was '
                "edited or is not specstack's: pack the run again"
            )
        sums[rel] = h
    return sums


def seal(run_dir: Path) -> Path:
    """Write SHA256SUMS into the run folder over every file of the bundle, as it stands: every run does at its
    end (not only `pack`), so a folder copied as it is proves itself (`specstack verify RUN`, `sha256sum -c`)."""
    run_dir = Path(run_dir)
    return atomic_write_bytes(run_dir / SUMS, format_sums(checksums(run_dir, bundle_files(run_dir))))


T = TypeVar("T")


def reseal_if_intact(run_dir: Path, write: Callable[[], T]) -> T:
    """Run `write` (which adds or rewrites files of the bundle) and seal again, but only when the bundle verified
    before it: a changed bundle is never blessed by a later write. Returns what `write` returned."""
    run_dir = Path(run_dir)
    intact = (run_dir / SUMS).is_file() and verify_dir(run_dir).ok
    out = write()
    if intact:
        seal(run_dir)
    return out


def _tarinfo(name: str, size: int, mtime: float) -> tarfile.TarInfo:
    # owner and mode normalised: the archive says nothing about the producing host's users
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = size, int(mtime), 0o644
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def pack(run_dir: Path, out: Path | None = None) -> dict[str, Any]:
    """Write `<run>.tar.gz` (default: beside the run folder): SHA256SUMS first, then every file of the bundle
    under `<run>/`. Returns the archive's path, its own sha256 and the file count."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise UserError(f"{run_dir} is not a run folder; pass results/<run-id>")
    out = Path(out) if out else run_dir.parent / f"{run_dir.name}.tar.gz"
    if out.resolve().is_relative_to(run_dir.resolve()):
        raise UserError(f"--out {out} is inside the run folder it packs; write the archive elsewhere")
    files = bundle_files(run_dir)
    if not files:
        raise UserError(f"{run_dir} holds no files to pack")
    sums = checksums(run_dir, files)
    listing = format_sums(sums)
    top = run_dir.name
    # gzip's own timestamp fixed: the same bundle packs to the same bytes
    with (
        atomic_writer(out) as raw,
        gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz,
        tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar,
    ):
        newest = max((run_dir / rel).stat().st_mtime for rel in files)
        tar.addfile(_tarinfo(f"{top}/{SUMS}", len(listing), newest), io.BytesIO(listing))
        for rel in files:
            path = run_dir / rel
            with open(path, "rb") as f:
                tar.addfile(_tarinfo(f"{top}/{rel}", path.stat().st_size, path.stat().st_mtime), f)
    with open(out, "rb") as f:
        digest = _sha256(f)
    return {"archive": out, "sha256": digest, "files": len(files)}


@dataclass
class Verification:
    target: Path
    checked: int = 0
    changed: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)
    unsafe: list[str] = field(default_factory=list)  # archive members that would land outside the run folder

    @property
    def ok(self) -> bool:
        return not (self.changed or self.missing or self.extra or self.unsafe)

    def lines(self) -> list[str]:
        return (
            [f"changed: {p}" for p in self.changed]
            + [f"missing: {p}" for p in self.missing]
            + [f"extra: {p}" for p in self.extra]
            + [f"unsafe path: {p}" for p in self.unsafe]
        )


def _judge(result: Verification, listed: dict[str, str], found: dict[str, str]) -> Verification:
    result.checked = len(listed)
    result.changed = sorted(p for p in listed if p in found and found[p] != listed[p])
    result.missing = sorted(p for p in listed if p not in found)
    result.extra = sorted(p for p in found if p not in listed)
    return result


def verify_dir(run_dir: Path) -> Verification:
    run_dir = Path(run_dir)
    sums_path = run_dir / SUMS
    if not sums_path.is_file():
        raise UserError(
            f"{run_dir} has no {SUMS}; every run writes one at its end (a run from before that, or "
            "one still running, has none): `specstack pack RUN` writes one into its archive"
        )
    listed = parse_sums(sums_path.read_text(), str(sums_path))
    return _judge(Verification(run_dir), listed, checksums(run_dir, bundle_files(run_dir)))


def verify_archive(archive: Path) -> Verification:
    result = Verification(Path(archive))
    found: dict[str, str] = {}
    listing: str | None = None
    top: str | None = None
    try:
        with tarfile.open(archive, mode="r:gz") as tar:
            for member in tar:
                name = PurePosixPath(member.name)
                if name.is_absolute() or ".." in name.parts or not name.parts:
                    result.unsafe.append(member.name)
                    continue
                top = top or name.parts[0]
                if name.parts[0] != top:
                    result.unsafe.append(member.name)
                    continue
                rel = PurePosixPath(*name.parts[1:])
                if member.isdir() or not rel.parts:
                    continue
                if not member.isfile():  # links and devices: not part of a bundle
                    result.unsafe.append(member.name)
                    continue
                data = tar.extractfile(member)
                assert data is not None  # a regular file's member always has data (isfile() above)
                if rel.as_posix() == SUMS:
                    listing = data.read().decode("utf-8", errors="replace")
                elif _in_bundle(rel):
                    found[rel.as_posix()] = _sha256(data)
                else:
                    result.extra.append(rel.as_posix())
    except (tarfile.TarError, OSError, EOFError) as e:
        raise UserError(
            f"{archive} is not a readable tar.gz ({e}); pass the archive `specstack pack` wrote, or "
            "the folder unpacked from it"
        ) from None
    if listing is None:
        raise UserError(f"{archive} has no {SUMS}; it was not written by `specstack pack`")
    listed = parse_sums(listing, f"{archive}:{top}/{SUMS}")
    extra = result.extra
    _judge(result, listed, found)
    result.extra = sorted(set(result.extra) | set(extra))
    return result


def verify(target: Path) -> Verification:
    target = Path(target)
    if target.is_dir():
        return verify_dir(target)
    if target.is_file():
        return verify_archive(target)
    raise UserError(
        f"no archive or folder {target}; pass the .tar.gz `specstack pack` wrote or the folder unpacked from it"
    )
