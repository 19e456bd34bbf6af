"""Who used the CPU during a measured window: the server's process tree, the bench client's, the collector's and
every other process on the host (issue 41 points 7 and 9).

A snapshot reads every visible process's own CPU time (user + system, psutil `cpu_times`) at the window's open
and close; `attribute` (pure, over two snapshots) charges each process's increase to the nearest of its ancestors
that is a named root (server, bench, collector), else to "other". What is not counted, and said so in the record:
- a process that exited inside the window: psutil reads only live processes, so its CPU in the window is lost
  (counted in `ended`); the bench client, which exits before the window closes, reports its own time instead
  (measure/bench.py: getrusage of itself and the children it waited for), passed here as `reported`;
- a process that could not be read (another user's, where /proc hides it: `unreadable`);
- processes outside this machine's view (another container's, a remote server's). `host_cpu` (the host's
  non-idle CPU time over the same window, psutil.cpu_times) shows what all of them together took, so its excess
  over the attributed sum is what the process table missed.
A process that started inside the window is counted whole (its CPU before the window is nil); one started while
the open snapshot was being read is counted whole too (a few milliseconds at most).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import psutil

GROUPS = ("server", "bench", "collector")  # a root nearer a process wins: bench and server run under the collector
TOP = 3  # the heaviest "other" processes kept by name


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    started: float  # create_time: with the pid, a process's identity (pids are reused)
    cpu: float  # own user + system seconds so far
    name: str = ""


@dataclass(frozen=True)
class Table:
    taken_at: float
    procs: Mapping[tuple[int, float], Proc]
    unreadable: int = 0
    host_cpu: float | None = None  # the host's non-idle CPU seconds since boot (all cores)


def snapshot() -> Table:
    """Every visible process's own CPU time now."""
    procs: dict[tuple[int, float], Proc] = {}
    unreadable = 0
    for p in psutil.process_iter(["pid", "ppid", "create_time", "cpu_times", "name"]):
        info = p.info
        times, started = info.get("cpu_times"), info.get("create_time")
        if times is None or started is None:  # psutil leaves a field None when access was denied
            unreadable += 1
            continue
        procs[(info["pid"], started)] = Proc(
            info["pid"], info.get("ppid") or 0, started, times.user + times.system, info.get("name") or ""
        )
    return Table(time.time(), procs, unreadable, _host_cpu())


def _host_cpu() -> float | None:
    try:
        t = psutil.cpu_times()
    except (OSError, RuntimeError):
        return None
    return t.user + t.system + getattr(t, "nice", 0.0) + getattr(t, "irq", 0.0) + getattr(t, "softirq", 0.0)


def _group(pid: int, parents: Mapping[int, int], roots: Mapping[int, str]) -> str:
    """The nearest named root among the process and its ancestors, else "other"."""
    seen: set[int] = set()
    while pid and pid not in seen:
        if pid in roots:
            return roots[pid]
        seen.add(pid)
        pid = parents.get(pid, 0)
    return "other"


def attribute(
    before: Table,
    after: Table,
    roots: Mapping[str, int | None],
    *,
    cores: int | None,
    reported: Mapping[str, float] | None = None,
    unknown: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The window's CPU seconds per group, from the snapshots at its open and close.
    `roots`: group -> the pid at the top of its tree (None: no such tree in this window; the group reads None).
    `reported`: group -> CPU seconds a tree that exited inside the window reported itself (the bench client).
    `unknown`: group -> why it could not be measured (a server without a local process): the group and "other"
    read None, since that tree's processes, if any run here, cannot be told from the others'."""
    unknown = dict(unknown or {})
    seconds = max(after.taken_at - before.taken_at, 0.0)
    parents = {p.pid: p.ppid for p in after.procs.values()}
    root_of = {pid: g for g, pid in roots.items() if pid}
    sums: dict[str, float] = {g: 0.0 for g in (*GROUPS, "other")}
    per_other: list[tuple[float, int, str]] = []
    for key, p in after.procs.items():
        was = before.procs.get(key)
        used = max(p.cpu - (was.cpu if was else 0.0), 0.0)
        group = _group(p.pid, parents, root_of)
        sums[group] += used
        if group == "other" and used > 0:
            per_other.append((used, p.pid, p.name))
    for g, s in (reported or {}).items():
        sums[g] = sums.get(g, 0.0) + s
    ended = sum(1 for key in before.procs if key not in after.procs)
    core_seconds = seconds * cores if cores else None
    out: dict[str, Any] = {"seconds": round(seconds, 3), "cores": cores}
    for g in (*GROUPS, "other"):
        measured = g in ("other", "collector") or roots.get(g) is not None or g in (reported or {})
        out[g] = None if g in unknown or not measured else round(sums[g], 3)
    if unknown:
        out["other"] = None
        # what the process table shows beside the collector and the bench client: the unknown tree's and others'
        out["other_or_" + "_or_".join(unknown)] = round(sums["other"], 3)
    out["other_share"] = None if out["other"] is None or not core_seconds else round(out["other"] / core_seconds, 4)
    out["bench_share_of_core"] = None if out["bench"] is None or not seconds else round(out["bench"] / seconds, 4)
    out["other_top"] = [
        {"pid": pid, "name": name, "cpu_s": round(used, 3)} for used, pid, name in sorted(per_other, reverse=True)[:TOP]
    ]
    if before.host_cpu is not None and after.host_cpu is not None:
        out["host_cpu"] = round(after.host_cpu - before.host_cpu, 3)
    out["ended"] = ended
    out["unreadable"] = after.unreadable
    if unknown:
        out["not_measured"] = unknown
    return out


def cores() -> int | None:
    return os.cpu_count()
