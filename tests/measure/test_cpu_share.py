"""Who used the CPU in a window: attribution over fake process tables, and one real snapshot around a busy child."""

import os
import signal
import subprocess
import sys
import time

import pytest

from specstack.measure.cpu_share import Proc, Table, attribute, snapshot

pytestmark = pytest.mark.unit


def table(at: float, *procs: tuple, unreadable: int = 0, host_cpu: float | None = None) -> Table:
    """procs: (pid, ppid, cpu seconds, name), all started at 1.0 unless a fifth item says when."""
    rows = [Proc(p[0], p[1], p[4] if len(p) > 4 else 1.0, p[2], p[3]) for p in procs]
    return Table(at, {(p.pid, p.started): p for p in rows}, unreadable, host_cpu)


# init(1) -> collector(10) -> server leash(20) -> engine core(21); collector -> bench(30); sshd(5) -> hog(6)
BEFORE = table(
    100.0,
    (1, 0, 5.0, "init"),
    (10, 1, 2.0, "python"),
    (20, 10, 1.0, "leash"),
    (21, 20, 50.0, "core"),
    (5, 1, 0.5, "sshd"),
    (6, 5, 10.0, "hog"),
    (7, 1, 3.0, "cron"),
    host_cpu=1000.0,
)


def test_each_process_is_charged_to_its_nearest_named_root():
    after = table(
        110.0,
        (1, 0, 5.1, "init"),
        (10, 1, 2.5, "python"),
        (20, 10, 1.0, "leash"),
        (21, 20, 65.0, "core"),
        (30, 10, 4.0, "bench", 105.0),  # bench started inside: counted whole
        (5, 1, 0.5, "sshd"),
        (6, 5, 18.0, "hog"),
        host_cpu=1030.0,
    )  # cron exited inside: lost
    out = attribute(BEFORE, after, {"server": 20, "bench": 30, "collector": 10}, cores=2)
    assert out["server"] == pytest.approx(15.0)  # the engine core under the leash, not the collector
    assert out["bench"] == pytest.approx(4.0)  # nearest root: bench, though the collector is above it
    assert out["collector"] == pytest.approx(0.5)
    assert out["other"] == pytest.approx(8.1)  # hog + init
    assert out["other_share"] == pytest.approx(8.1 / 20)
    assert out["bench_share_of_core"] == pytest.approx(0.4)
    assert [p["name"] for p in out["other_top"]] == ["hog", "init"]
    assert out["ended"] == 1 and out["host_cpu"] == pytest.approx(30.0)


def test_a_reused_pid_is_a_new_process_and_a_reported_tree_adds_its_own_time():
    # pid 6 exited and a new process got its pid: counted from zero, the old one is an ended process
    after = table(
        110.0,
        (1, 0, 5.0, "init"),
        (10, 1, 2.0, "python"),
        (20, 10, 1.0, "leash"),
        (21, 20, 50.0, "core"),
        (5, 1, 0.5, "sshd"),
        (6, 1, 1.5, "new", 104.0),
        (7, 1, 3.0, "cron"),
    )
    out = attribute(BEFORE, after, {"server": 20, "bench": 30, "collector": 10}, cores=2, reported={"bench": 7.0})
    assert out["other"] == pytest.approx(1.5) and out["ended"] == 1
    assert out["bench"] == pytest.approx(7.0) and out["bench_share_of_core"] == pytest.approx(0.7)


def test_no_bench_and_no_local_server_read_none_not_zero():
    after = table(110.0, *[(p.pid, p.ppid, p.cpu + 1.0, p.name) for p in BEFORE.procs.values()])
    out = attribute(
        BEFORE, after, {"server": None, "bench": None, "collector": 10}, cores=2, unknown={"server": "no local process"}
    )
    assert out["server"] is None and out["bench"] is None and out["bench_share_of_core"] is None
    assert out["other"] is None and out["other_share"] is None  # the server's CPU may be in it: not guessed
    assert out["other_or_server"] == pytest.approx(4.0)  # init, sshd, hog, cron
    assert out["not_measured"] == {"server": "no local process"}
    assert out["collector"] == pytest.approx(3.0)  # its children with no named root are its own


def test_a_busy_process_outside_the_named_trees_shows_as_other():
    """A real process table: this test is the collector, a sleeping child of it the "server", and a busy loop it
    started through an intermediate that exits at once, so the loop belongs to neither tree (as a stranger's)."""
    loop = "import time\nend = time.time() + 20\nwhile time.time() < end: pass"
    spawn = f"import subprocess, sys; print(subprocess.Popen([sys.executable, '-c', {loop!r}], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).pid)"
    server = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    hog = int(subprocess.run([sys.executable, "-c", spawn], capture_output=True, text=True, check=True).stdout)
    try:
        before = snapshot()
        time.sleep(1.0)
        after = snapshot()
    finally:
        os.kill(hog, signal.SIGKILL)
        server.kill()
        server.wait()
    roots = {"server": server.pid, "bench": None, "collector": os.getpid()}
    out = attribute(before, after, roots, cores=os.cpu_count())
    assert hog in {p.pid for p in after.procs.values()}
    # the same window without the loop: "other" loses exactly the loop's time (other processes share this machine)
    without = Table(after.taken_at, {k: p for k, p in after.procs.items() if p.pid != hog}, after.unreadable)
    hogs_time = out["other"] - attribute(before, without, roots, cores=os.cpu_count())["other"]
    assert hogs_time > 0 and hogs_time > out["server"] and out["other_share"] > 0
    assert out["bench"] is None and out["collector"] is not None
