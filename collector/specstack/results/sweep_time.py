"""The manifest's `sweep_time` record (#42): how long a `specstack sweep` (or `run`: the same loop) took from its process's start to the
moment its report began, and how much of that its methods' own timings hold. The rest is outside every method: the
process's start-up and imports before the first method's pre-flight, and between and after the methods the skip
decisions, the run lock, the last Prometheus checks and handing a held server back. The time breakdown
(report/time_breakdown.py) shows it as a row of its own, so a sweep's harness share counts it. The report itself, and
the seal after it, come after `methods_ended` and are not in it.

Written once by the sweep loop (pipeline/sweep.py run_all) after its last method, before the report; a sweep run again
on the same run id (kept methods skipped) replaces it with its own."""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import psutil

from specstack.results.bundle import update_manifest

FIELD = "sweep_time"  # the manifest's key


@dataclasses.dataclass(frozen=True)
class SweepTime:
    process_started: float  # epoch seconds: the `specstack sweep` process began (process_start()), imports included
    began: float  # epoch seconds: the sweep loop's start, after the command line was read
    methods_ended: float  # epoch seconds: the last method's end, before the report
    methods: tuple[str, ...]  # the result folders this sweep ran (not those it kept from an earlier one)
    methods_s: float  # the sum of those methods' timings (checks + total): what their rows of the breakdown hold

    @property
    def wall_s(self) -> float:
        """From the process's start to the report's."""
        return self.methods_ended - self.process_started

    @property
    def startup_s(self) -> float:
        """Before the sweep loop: the interpreter, specstack's imports, the command line's checks."""
        return self.began - self.process_started

    @property
    def outside_s(self) -> float:
        """Neither in a method's checks nor in its total: the harness's, outside every method."""
        return self.wall_s - self.methods_s

    def to_json(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "methods": list(self.methods)}

    @classmethod
    def from_manifest(cls, manifest: Mapping[str, Any]) -> SweepTime | None:
        """The record, or None where the run has none (a bundle from before it; a parallel, compose or cluster
        run, whose methods no one loop ran) or it does not read as one."""
        raw = manifest.get(FIELD)
        if not isinstance(raw, Mapping):
            return None
        try:
            record = cls(
                process_started=float(raw["process_started"]),
                began=float(raw["began"]),
                methods_ended=float(raw["methods_ended"]),
                methods=tuple(str(m) for m in raw["methods"]),
                methods_s=float(raw["methods_s"]),
            )
        except (KeyError, TypeError, ValueError):
            return None
        ordered = record.process_started <= record.began <= record.methods_ended
        return record if ordered and 0 <= record.methods_s <= record.wall_s else None


def method_seconds(summary: Mapping[str, Any]) -> float:
    """What a method's row of the breakdown holds: its pre-flight checks and its total (timings)."""
    timings = summary.get("timings") or {}
    return float(timings.get("checks") or 0.0) + float(timings.get("total") or 0.0)


# Set by the console script's entry (cli/main.py): the process is one command, so the first sweep it runs started
# with it. A sweep run in-process by another caller (a test, the demo's second part) starts where its loop begins.
_command_process = False


def command_started() -> None:
    global _command_process
    _command_process = True


def process_start() -> float:
    """This process's creation, epoch seconds, to the kernel's clock tick (10 ms). psutil's create_time() adds the
    start's ticks to /proc/stat's boot time, which is whole seconds: up to 1 s early (0.86 s on the CPU host of
    2026-12-07), all of it read as start-up. The boot time from CLOCK_BOOTTIME, the clock the start's ticks count
    on, has no such cut; psutil where that clock or /proc is missing."""
    try:
        with open(f"/proc/{os.getpid()}/stat") as f:
            ticks = int(f.read().rsplit(")", 1)[1].split()[19])  # field 22, starttime; the name may hold spaces
        return time.time() - time.clock_gettime(time.CLOCK_BOOTTIME) + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, AttributeError, IndexError, ValueError):
        return float(psutil.Process().create_time())


def _process_started(began: float) -> float:
    """The process's creation for the first sweep of a command's process, else the loop's start (no start-up)."""
    global _command_process
    if not _command_process:
        return began
    _command_process = False
    return min(process_start(), began)


def record(run_dir: Path, *, began: float, methods_ended: float, ran: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
    """Into the run's manifest: this process's start, the loop's start and end, the methods it ran (folder name,
    summary)."""
    update_manifest(
        run_dir,
        **{
            FIELD: SweepTime(
                process_started=_process_started(began),
                began=began,
                methods_ended=methods_ended,
                methods=tuple(name for name, _ in ran),
                methods_s=sum(method_seconds(summary) for _, summary in ran),
            ).to_json()
        },
    )
