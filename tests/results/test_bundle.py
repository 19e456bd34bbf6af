"""Atomic writes and staged publication of a method's results."""
import json
import os

import pytest

from specstack.results.bundle import MethodBundle, update_manifest
from specstack.results.files import atomic_write_json, check_writable
from specstack.errors import UserError
from tests.support import free_port

pytestmark = pytest.mark.unit


def test_atomic_write_leaves_old_file_when_write_fails(tmp_path, monkeypatch):
    path = atomic_write_json(tmp_path / "s.json", {"v": 1})

    def broken_fsync(fd):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(OSError, match="No space"):
        atomic_write_json(path, {"v": 2})
    assert json.loads(path.read_text()) == {"v": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["s.json"]  # no temp file left behind


def test_failed_run_never_replaces_a_good_one(tmp_path):
    good = MethodBundle(tmp_path, "r1", "ngram")
    good.write_json("summary.json", {"status": "ok"})
    assert good.finalize(ok=True) == tmp_path / "r1" / "ngram"
    with pytest.raises(UserError, match="already holds a result.*--force"):
        MethodBundle(tmp_path, "r1", "ngram")
    retry = MethodBundle(tmp_path, "r1", "ngram", force=True)
    retry.write_json("summary.json", {"status": "failed"})
    failed = retry.finalize(ok=False)
    assert failed.name.startswith("ngram.failed-")
    assert json.loads((tmp_path / "r1" / "ngram" / "summary.json").read_text()) == {"status": "ok"}


def test_forced_success_keeps_the_replaced_result(tmp_path):
    first = MethodBundle(tmp_path, "r", "m")
    first.write_text("x.txt", "old")
    first.finalize(ok=True)
    second = MethodBundle(tmp_path, "r", "m", force=True)
    second.write_text("x.txt", "new")
    second.finalize(ok=True)
    assert (tmp_path / "r" / "m" / "x.txt").read_text() == "new"
    assert [p.read_text() for p in (tmp_path / "r").glob("m.replaced-*/x.txt")] == ["old"]


def test_manifest_merges_methods(tmp_path):
    update_manifest(tmp_path, run_id="r", methods={"a": {"status": "ok"}})
    m = update_manifest(tmp_path, methods={"b": {"status": "failed"}})
    assert m["run_id"] == "r" and set(m["methods"]) == {"a", "b"}


def test_unwritable_results_folder(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        if os.access(folder, os.W_OK):  # root ignores mode bits: use a path under a file instead
            folder = tmp_path / "file"
            folder.write_text("")
            folder = folder / "sub"
        with pytest.raises(UserError, match="not writable.*--results"):
            check_writable(folder)
    finally:
        (tmp_path / "ro").chmod(0o700)


def test_prometheus_down_leaves_the_direct_view_and_says_which_view_is_missing(tmp_path):
    from specstack.measure.prometheus_view import bundle_view
    dead = f"http://127.0.0.1:{free_port()}"  # a port nobody listens on
    window = {"phase": "acceptance", "task": "code", "start": 100.0, "settled_at": 105.0}
    view = bundle_view(dead, [window], {"method": "ngram", "run_id": "r"}, tmp_path, 5.0)
    assert view["tasks"]["code"]["status"] == "missing"
    assert "ConnectionError" in view["tasks"]["code"]["reason"]
    assert not list(tmp_path.glob("*.png"))


def test_largest_gap_counts_the_window_edges():
    from specstack.measure.prometheus_view import largest_gap
    assert largest_gap([101, 102, 103], 100, 104) == (100, 101)        # every stretch 1 s: the first wins
    assert largest_gap([101, 102, 110, 111], 100, 112) == (102, 110)   # a hole in the middle
    assert largest_gap([101, 102], 100, 109) == (102, 109)             # no sample at the end
    assert largest_gap([], 100, 109) == (100, 109)                     # none at all
    assert largest_gap([90, 101, 120], 100, 110) == (101, 110)         # samples outside do not count


def _write_many(run_dir, writer: int, count: int) -> None:
    for i in range(count):
        update_manifest(run_dir, methods={f"m{writer}": {f"k{i}": i}}, **{f"w{writer}-{i}": "h"})


def test_concurrent_manifest_writers_lose_nothing(tmp_path):
    """Parallel collectors (make sweep GPUS=...) update one manifest at once: every entry of every writer stays,
    and a method's entry is merged key by key (the host's slot beside the collector's status)."""
    import multiprocessing
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_write_many, args=(tmp_path, w, 40)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    m = json.loads((tmp_path / "manifest.json").read_text())
    assert {name: len(entry) for name, entry in m["methods"].items()} == {f"m{w}": 40 for w in range(4)}
    assert sum(key.startswith("w") for key in m) == 4 * 40
    assert [p.name for p in tmp_path.iterdir()] == ["manifest.json"]   # no lock file, no temp file left


def test_manifest_merges_a_methods_entry_key_by_key(tmp_path):
    update_manifest(tmp_path, methods={"a": {"slot": {"cpuset": "1"}}})
    m = update_manifest(tmp_path, methods={"a": {"status": "ok", "dir": "a"}})
    assert m["methods"]["a"] == {"slot": {"cpuset": "1"}, "status": "ok", "dir": "a"}
