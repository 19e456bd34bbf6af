"""Atomic writes and staged publication of a method's results."""

import json
import os

import pytest

from specstack.errors import UserError
from specstack.results.bundle import MethodBundle, update_manifest
from specstack.results.files import atomic_write_json, check_writable
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

    assert largest_gap([101, 102, 103], 100, 104) == (100, 101)  # every stretch 1 s: the first wins
    assert largest_gap([101, 102, 110, 111], 100, 112) == (102, 110)  # a hole in the middle
    assert largest_gap([101, 102], 100, 109) == (102, 109)  # no sample at the end
    assert largest_gap([], 100, 109) == (100, 109)  # none at all
    assert largest_gap([90, 101, 120], 100, 110) == (101, 110)  # samples outside do not count


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
    assert [p.name for p in tmp_path.iterdir()] == ["manifest.json"]  # no lock file, no temp file left


def test_manifest_merges_a_methods_entry_key_by_key(tmp_path):
    update_manifest(tmp_path, methods={"a": {"slot": {"cpuset": "1"}}})
    m = update_manifest(tmp_path, methods={"a": {"status": "ok", "dir": "a"}})
    assert m["methods"]["a"] == {"slot": {"cpuset": "1"}, "status": "ok", "dir": "a"}


STAGE_AND_WAIT = """import sys, time
from specstack.results.bundle import MethodBundle
bundle = MethodBundle(sys.argv[1], "r1", sys.argv[2], force=len(sys.argv) > 3)
bundle.write_json("warmup.jsonl", {"half": "written"})
print(bundle.staging, flush=True)
time.sleep(120)
"""


def _staging_process(results, method: str, *force: str):
    import subprocess
    import sys

    proc = subprocess.Popen(
        [sys.executable, "-c", STAGE_AND_WAIT, str(results), method, *force], stdout=subprocess.PIPE, text=True
    )
    from pathlib import Path

    return proc, Path(proc.stdout.readline().strip())


def test_a_killed_runs_staging_is_kept_as_failed_and_a_live_ones_left_alone(tmp_path):
    """A harness SIGKILLed while it stages (nothing of it runs any cleanup) leaves `.<method>.staging-*`: the next
    run of the run id turns it into `<method>.failed-*` naming the cause, the manifest says failed, a resumed sweep
    runs it again; a staging folder a live harness holds (a parallel slot) is not touched."""
    import signal

    from specstack.results import bundle as bundle_module
    from specstack.results import layout
    from specstack.results.reader import good_result, load_run

    killed, dead = _staging_process(tmp_path, "ngram")
    live, alive = _staging_process(tmp_path, "suffix")
    try:
        os.kill(killed.pid, signal.SIGKILL)
        killed.wait()
        run_dir = tmp_path / "r1"
        update_manifest(run_dir, methods={"ngram": {"slot": "0"}})  # what a parallel sweep recorded before the kill
        (kept,) = bundle_module.keep_dead_staging(run_dir)
        assert kept.name.startswith("ngram" + layout.FAILED_MARK) and not dead.exists() and alive.is_dir()
        assert json.loads((kept / "warmup.jsonl").read_text()) == {"half": "written"}  # what it had is kept
        summary = json.loads((kept / layout.SUMMARY_FILE).read_text())
        assert summary["status"] == "failed" and summary["error"].startswith("the harness was killed (no clean exit)")
        entry = json.loads((run_dir / layout.MANIFEST).read_text())["methods"]["ngram"]
        assert entry == {"slot": "0", "status": "failed", "dir": kept.name, "error": summary["error"]}
        assert good_result(run_dir, "ngram") is None  # a resumed sweep runs it again
        assert [f.name for f in load_run(run_dir).failed] == ["ngram"]
        assert bundle_module.keep_dead_staging(run_dir) == [] and alive.is_dir()  # once, and never a live one
    finally:
        live.kill()
        live.wait()
    (kept,) = bundle_module.keep_dead_staging(tmp_path / "r1")  # its harness gone too: now it is kept
    assert kept.name.startswith("suffix" + layout.FAILED_MARK)


def test_a_killed_forced_rerun_leaves_the_good_result_the_manifests(tmp_path):
    """--force rerun killed while staging: the good result it would have replaced stays the manifest's entry."""
    import signal

    from specstack.results import bundle as bundle_module

    good = MethodBundle(tmp_path, "r1", "ngram")
    good.write_json("summary.json", {"status": "ok"})
    update_manifest(tmp_path / "r1", methods={"ngram": {"status": "ok", "dir": good.finalize(ok=True).name}})
    killed, _ = _staging_process(tmp_path, "ngram", "--force")
    os.kill(killed.pid, signal.SIGKILL)
    killed.wait()
    (kept,) = bundle_module.keep_dead_staging(tmp_path / "r1")
    assert kept.name.startswith("ngram.failed-") and (tmp_path / "r1" / "ngram" / "summary.json").exists()
    methods = json.loads((tmp_path / "r1" / "manifest.json").read_text())["methods"]
    assert methods["ngram"] == {"status": "ok", "dir": "ngram"}
