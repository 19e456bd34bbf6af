"""The slots of a parallel sweep and the queue that runs a sweep's methods on them: the one loop of both front doors,
`make sweep GPUS=0,1 / PLATFORM=cpu CPUSETS=0,1` (host/lifecycle.py `parallel_sweep`, each job a compose method
flow) and `specstack sweep --gpus 0,1 | --cpusets 0,1` (pipeline/parallel.py, each job a `specstack slot-run`).

A slot is one GPU (an index or a UUID; with GPUS=0,1 CPUSETS=0-15,16-31 also the cores of its server) or one
CPU set (a core or a range of cores). Each slot runs one method
at a time; a free slot takes the next method of the queue, so more methods than slots just wait their turn.
Each method is a whole one-method flow (the caller's, in a thread of its own, with that slot's GPU or CPUSET),
its output lines prefixed with its name. The manifest says `mode: parallel` and the slots; each method's own slot (GPU
index, UUID and name, or the server's cpuset) is recorded beside it by `record --slot` (host/provenance.py).

Calibration (CALIBRATE=1): two GPUs of one model still differ (clocks, thermals, PCIe), so every baseline of the
sweep also runs on every slot: slot 0's run keeps the baseline's name, slot i's is `<baseline>-slot<i>`, and each
method is compared with the baseline measured on its own slot (`--baseline-result`); the report shows the
slot-to-slot spread beside each speedup (report/placement.py). Two runs of one method are never up at once: they
are one compose service, so a slot whose calibration run waits for that service takes other methods meanwhile.

Standard library only and Python 3.8-safe: host/ runs it under the host's plain `python3` (make, before any venv
exists; tests/host/test_cli.py checks the import graph and the syntax). Its errors are HostError, naming make's
knobs; pipeline/parallel.py says its own options instead.
"""

from __future__ import annotations

import re
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Union

from specstack.host import HostError
from specstack.results.bundle import update_manifest

_GPU = re.compile(r"^(\d+|GPU-[0-9A-Fa-f-]+|MIG-[0-9A-Za-z/-]+)$")
_CORES = re.compile(r"^(\d+)(?:-(\d+))?$")


def cores_of(cpuset: str) -> set[int]:
    m = _CORES.match(cpuset)
    if not m:
        raise HostError(
            f"CPUSETS: {cpuset!r} is not a core (3) or a range of cores (2-3); give one per server, "
            "separated by commas: CPUSETS=0,1 or CPUSETS=0-3,4-7"
        )
    first, last = int(m.group(1)), int(m.group(2) or m.group(1))
    if last < first:
        raise HostError(f"CPUSETS: the range {cpuset!r} runs backwards; write it low-high ({last}-{first})")
    return set(range(first, last + 1))


def _split(knob: str, text: str, what: str) -> list[str]:
    items = [s.strip() for s in text.split(",")]
    if not text.strip() or "" in items:
        raise HostError(f"{knob}={text!r}: give one {what} per server, separated by commas (e.g. {knob}=0,1)")
    if len(set(items)) != len(items):
        raise HostError(
            f"{knob}={text}: a slot appears twice; two servers on one "
            f"{'GPU' if knob == 'GPUS' else 'core'} would measure each other"
        )
    return items


def parse_cpusets(text: str, cores: int) -> list[str]:
    """CPUSETS: one core or range of cores per server, none shared, all on this host."""
    slots = _split("CPUSETS", text, "CPU set")
    seen: set[int] = set()
    for s in slots:
        own = cores_of(s)
        if max(own) >= cores:
            raise HostError(
                f"CPUSETS: {s!r} names core {max(own)}, but this host has {cores} (0-{cores - 1}); "
                f"give at most {cores} single-core slots"
            )
        if own & seen:
            raise HostError(
                f"CPUSETS={text}: the CPU sets overlap (core {min(own & seen)}); each server needs cores of its own"
            )
        seen |= own
    return slots


def parse_slots(platform: str, text: str, cores: int, cpusets: str = "") -> list[dict[str, str]]:
    """The slots: GPUS (gpu; with CPUSETS, one CPU set per GPU too) or CPUSETS (cpu). Each slot is a dict
    {"slot": GPU or CPU set, "cpuset": the server's cores, "" for none}."""
    if not platform.startswith("gpu"):
        return [{"slot": c, "cpuset": c} for c in parse_cpusets(text, cores)]
    gpus = _split("GPUS", text, "GPU")
    bad = [g for g in gpus if not _GPU.match(g)]
    if bad:
        raise HostError(f"GPUS: {bad[0]!r} is not a GPU index (0) or UUID (GPU-...); see nvidia-smi -L")
    sets = parse_cpusets(cpusets, cores) if cpusets.strip() else [""] * len(gpus)
    if len(sets) != len(gpus):
        raise HostError(f"CPUSETS={cpusets} with GPUS={text}: give one CPU set per GPU ({len(gpus)}), or none")
    return [{"slot": g, "cpuset": c} for g, c in zip(gpus, sets)]


def _pump(stream, prefix: str) -> None:
    for line in stream:
        sys.stdout.write(f"[{prefix}] {line}")
        sys.stdout.flush()


@dataclass
class Job:
    method: str  # the methods.toml method: its server is the compose service vllm-<method>
    name: str  # its result folder in the run (a calibration run on slot i > 0: <method>-slot<i>)
    slot: int | None = None  # pinned to this slot (calibration), or the next free one
    baseline: str = ""  # the method's baseline (methods.toml) when calibrating: compared on its own slot


def calibration_name(baseline: str, slot: int) -> str:
    """Slot 0's calibration run is the run's baseline itself, so every reader that knows `baseline` still does."""
    return baseline if slot == 0 else f"{baseline}-slot{slot}"


def plan_jobs(methods: list[str], baselines: dict[str, str], slots: int, calibrate: bool) -> list[Job]:
    """The queue: each method once; calibrating, each baseline (a method with no baseline of its own) once per
    slot, pinned, and each other method told its baseline so it is compared on the slot it gets."""
    if not calibrate:
        return [Job(m, m) for m in methods]
    own = [m for m in methods if not baselines.get(m)]
    missing = sorted({baselines[m] for m in methods if baselines.get(m) and baselines[m] not in methods})
    if missing:
        raise HostError(
            f"CALIBRATE=1 runs each baseline on every slot, but the sweep's methods lack "
            f"{' '.join(missing)}: add it to SWEEP_METHODS (or SWEEP_MTP_METHODS)"
        )
    pinned = [Job(b, calibration_name(b, i), slot=i) for i in range(slots) for b in own]
    return pinned + [Job(m, m, baseline=baselines[m]) for m in methods if m not in own]


class _Queue:
    """Jobs for the slots: a slot's pinned jobs first, then the shared ones in order; never two jobs of one
    method (one compose service) at once. Closed (interrupted), it hands out no more."""

    def __init__(self, jobs: list[Job]):
        self.jobs, self.cond, self.closed = list(jobs), threading.Condition(), False
        self.running: set[str] = set()  # the methods of the jobs running

    def take(self, slot: int) -> Job | None:
        with self.cond:
            while True:
                mine = [j for j in self.jobs if j.slot in (slot, None)]
                if not mine or self.closed:
                    return None
                job = next((j for j in mine if j.slot == slot and j.method not in self.running), None) or next(
                    (j for j in mine if j.slot is None and j.method not in self.running), None
                )
                if job:
                    self.jobs.remove(job)
                    self.running.add(job.method)
                    return job
                self.cond.wait()

    def done(self, job: Job) -> None:
        with self.cond:
            self.running.discard(job.method)
            self.cond.notify_all()

    def close(self) -> None:
        with self.cond:
            self.closed = True
            self.cond.notify_all()


def _run_argv(argv: list[str], name: str) -> int:
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
    _pump(proc.stdout, name)
    return proc.wait()


Command = Union[List[str], Callable[[Dict[str, str]], int]]


def run_queue(
    slots: list[dict[str, str]], jobs: list[Job] | list[str], command: Command, stop: Callable[[], None] | None = None
) -> list[str]:
    """Run `command` for every job, one per slot at a time, and return the results whose command failed, in queue
    order. The job's fields: {method}, {name} (result folder), {baseline} (the result to compare with, "" for the
    method's own), {index} and the slot's {slot} and {cpuset}. `command` is a callable given those fields (run
    in the slot's thread; its exit status), or an argv they are filled into (its output prefixed with the name).
    Interrupted (a signal in the main thread), no further job starts, `stop` is called (it tells the running jobs
    to end: processes a signal to this one alone never reached) and the running ones end first."""
    jobs = [j if isinstance(j, Job) else Job(j, j) for j in jobs]
    order, todo = [j.name for j in jobs], _Queue(jobs)
    failed: set[str] = set()

    # Each slot says itself when it has ended: Thread.join cannot be trusted once a signal interrupts it. CPython
    # before 3.13 then marks the joined thread stopped while it still runs (python/cpython#90882, "Thread
    # spuriously marked dead after interrupting a join call"), so the run went down, and the process ended,
    # before that slot's cleanup had stopped its server (the parallel compose interrupt test, twice in CI;
    # tests/pipeline/test_slots.py reproduces it).
    ended = [threading.Event() for _ in slots]

    def worker(index: int, slot: dict[str, str]) -> None:
        try:
            while (job := todo.take(index)) is not None:
                base = calibration_name(job.baseline, index) if job.baseline else ""
                fields = dict(method=job.method, name=job.name, baseline=base, index=str(index), **slot)
                print(f"=== slot {index} ({slot['slot']}): {job.name} ===", flush=True)
                try:
                    rc = (
                        command(fields)
                        if callable(command)
                        else _run_argv([a.format(**fields) for a in command], job.name)
                    )
                    if rc != 0:
                        failed.add(job.name)
                except BaseException as e:  # noqa: BLE001 - one job's failure (or its interruption) is its own
                    failed.add(job.name)
                    if not isinstance(e, Exception):
                        todo.close()
                    else:
                        print(f"[{job.name}] failed: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
                finally:
                    todo.done(job)
        finally:
            ended[index].set()

    threads = [threading.Thread(target=worker, args=(i, s), name=f"slot-{i}") for i, s in enumerate(slots)]
    for t in threads:
        t.start()
    try:
        for done in ended:
            while not done.wait(0.5):
                pass
    except BaseException:
        todo.close()
        if stop is not None:
            stop()
        for done in ended:  # the signal handler ignores any later signal: these waits are not cut short
            done.wait()
        raise
    for t in threads:
        t.join()
    return [n for n in order if n in failed]


def parallel(
    *,
    platform: str,
    slots_text: str,
    cores: int,
    methods: list[str],
    command: Command,
    run_dir: Path,
    cpusets: str = "",
    baselines: dict[str, str] | None = None,
    calibrate: bool = False,
    stop: Callable[[], None] | None = None,
) -> list[str]:
    """Check the slots, mark the run parallel in its manifest, run the queue; the failed results."""
    slots = parse_slots(platform, slots_text, cores, cpusets)
    if not methods:
        raise HostError("no methods to run: set SWEEP_METHODS (and SWEEP_MTP_METHODS)")
    jobs = plan_jobs(methods, baselines or {}, len(slots), calibrate)
    gpu = platform.startswith("gpu")
    update_manifest(
        run_dir,
        mode="parallel",
        calibration=calibrate,
        slots=[{"gpu": s["slot"], "cpuset": s["cpuset"] or None} if gpu else {"cpuset": s["cpuset"]} for s in slots],
    )
    return run_queue(slots, jobs, command, stop)
