"""pack / verify on a constructed run: the archive carries a checksum list, a moved and unpacked copy verifies
and reads back in report and compare, and every changed, missing or extra file is named."""

from __future__ import annotations

import hashlib
import json
import shutil
import tarfile
from pathlib import Path

import pytest

from specstack.cli.main import main
from specstack.results.archive import SUMS, pack, verify
from tests.bundles import make_run

pytestmark = pytest.mark.unit


def _unpack(archive: Path, into: Path) -> Path:
    into.mkdir(parents=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    (run,) = list(into.iterdir())
    return run


@pytest.fixture
def packed(tmp_path, capsys):
    run = make_run(tmp_path / "producer" / "results", "run-a")
    archive = tmp_path / "handoff" / "run-a.tar.gz"
    assert main(["pack", str(run), "--out", str(archive)]) == 0
    printed = json.loads(capsys.readouterr().out)
    return run, archive, printed


def test_pack_lists_every_file_and_prints_its_own_sha256(packed):
    run, archive, printed = packed
    assert printed["sha256"] == hashlib.sha256(archive.read_bytes()).hexdigest()
    files = sorted(p.relative_to(run).as_posix() for p in run.rglob("*") if p.is_file())
    assert printed["files"] == len(files)
    with tarfile.open(archive) as tar:
        names = tar.getnames()
        listing = tar.extractfile(f"run-a/{SUMS}").read().decode()
    assert names[0] == f"run-a/{SUMS}" and sorted(names[1:]) == [f"run-a/{f}" for f in files]
    listed = {line.split("  ", 1)[1]: line.split("  ", 1)[0] for line in listing.splitlines()}
    assert listed == {f: hashlib.sha256((run / f).read_bytes()).hexdigest() for f in files}
    assert str(run.parent) not in listing  # relative paths only
    # the same bundle packs to the same bytes
    again = pack(run, archive.parent / "again.tar.gz")
    assert again["sha256"] == printed["sha256"]


def test_moved_and_unpacked_bundle_verifies_and_reads_back(packed, tmp_path, capsys):
    run, archive, _ = packed
    moved = tmp_path / "receiver" / "incoming.tar.gz"
    moved.parent.mkdir()
    shutil.move(archive, moved)
    shutil.rmtree(tmp_path / "producer")  # nothing of the producing host's folders is left
    assert main(["verify", str(moved)]) == 0
    unpacked = _unpack(moved, tmp_path / "receiver" / "x")
    assert main(["verify", str(unpacked)]) == 0
    capsys.readouterr()
    assert main(["report", str(unpacked)]) == 0
    assert "ngram" in (unpacked / "report.md").read_text()
    out = tmp_path / "receiver" / "cmp"
    assert main(["compare", str(unpacked), str(unpacked), "--out", str(out)]) == 0
    assert json.loads((out / "compare.json").read_text())["changed"] == []


def test_one_edited_byte_is_named(packed, tmp_path, capsys):
    _, archive, _ = packed
    run = _unpack(archive, tmp_path / "u")
    target = run / "ngram" / "summary.json"
    data = bytearray(target.read_bytes())
    data[len(data) // 2] ^= 0x01
    target.write_bytes(bytes(data))
    capsys.readouterr()
    assert main(["verify", str(run)]) == 1
    out = capsys.readouterr().out
    assert "changed: ngram/summary.json" in out.splitlines()
    assert [line for line in out.splitlines() if line.startswith(("changed", "missing", "extra"))] == [
        "changed: ngram/summary.json"
    ]


def test_missing_and_extra_files_are_named(packed, tmp_path):
    _, archive, _ = packed
    run = _unpack(archive, tmp_path / "u")
    (run / "baseline" / "bench" / "code-c1-r0.json").unlink()
    (run / "ngram" / "notes.txt").write_text("added by hand\n")
    result = verify(run)
    assert not result.ok
    assert result.missing == ["baseline/bench/code-c1-r0.json"] and result.extra == ["ngram/notes.txt"]
    assert result.changed == []


def test_an_edited_archive_is_named_without_unpacking(packed, tmp_path):
    run, archive, _ = packed
    work = _unpack(archive, tmp_path / "u")
    (work / "manifest.json").write_text((work / "manifest.json").read_text().replace("cpu-native", "cpu-nativf"))
    forged = tmp_path / "forged.tar.gz"
    with tarfile.open(forged, "w:gz") as tar:  # repacked by hand, with the old checksum list
        tar.add(work, arcname=work.name)
    result = verify(forged)
    assert result.changed == ["manifest.json"] and not result.missing and not result.extra


@pytest.mark.parametrize(
    "args,says",
    [
        (["verify", "/nonexistent/run.tar.gz"], "no archive or folder"),
        (["pack", "/nonexistent/run"], "no run folder"),
    ],
)
def test_user_errors_name_the_fix(args, says, capsys):
    assert main(args) == 2
    assert says in capsys.readouterr().err


def test_verify_of_an_unpacked_run_without_a_list_says_pack_first(tmp_path, capsys):
    run = make_run(tmp_path, "plain")
    assert main(["verify", str(run)]) == 2
    assert "specstack pack RUN" in capsys.readouterr().err


def test_an_archive_inside_the_run_is_refused(tmp_path, capsys):
    run = make_run(tmp_path, "r")
    assert main(["pack", str(run), "--out", str(run / "r.tar.gz")]) == 2
    assert "inside the run folder" in capsys.readouterr().err


def test_a_sealed_run_proves_itself_and_a_report_reseals_only_an_intact_one(tmp_path, capsys):
    """Issue 29 point 9: every run writes SHA256SUMS and its console tables at its end, verify checks the folder
    as it is; a later report seals again only when nothing had changed before it."""
    from specstack.report.build import write_report
    from specstack.report.console_table import seal_run

    run = make_run(tmp_path / "results", "run-s")
    seal_run(run)
    tables = (run / "tables.txt").read_text()
    assert tables.startswith("task: ") and "c=1 (× base)" in tables
    listed = dict(reversed(line.split("  ", 1)) for line in (run / SUMS).read_text().splitlines())
    assert "tables.txt" in listed and "ngram/summary.json" in listed and SUMS not in listed
    assert verify(run).ok and main(["verify", str(run)]) == 0
    write_report(run)  # intact before: sealed again, report files included
    assert verify(run).ok and "report.md" in (run / SUMS).read_text()
    (run / "ngram" / "summary.json").write_text((run / "ngram" / "summary.json").read_text() + " ")
    write_report(run)  # changed before: never blessed
    result = verify(run)
    assert not result.ok and result.changed == ["ngram/summary.json"]
