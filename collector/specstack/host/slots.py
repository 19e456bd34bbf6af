"""`parallel`: a sweep's methods on several slots at once (make sweep GPUS=0,1 / PLATFORM=cpu CPUSETS=0,1).

A slot is one GPU (an index or a UUID; with GPUS=0,1 CPUSETS=0-15,16-31 also the cores of its server) or one
CPU set (a core or a range of cores). Each slot runs one method
at a time; a free slot takes the next method of the queue, so more methods than slots just wait their turn.
Each method is a whole one-method flow (make's _compose-method with that slot's GPU or CPUSET), its output
lines prefixed with its name. The manifest says `mode: parallel` and the slots; each method's own slot (GPU
index, UUID and name, or the server's cpuset) is recorded beside it by `record --slot` (provenance.py).
"""
from __future__ import annotations

import queue
import re
import subprocess
import sys
import threading
from pathlib import Path

from specstack.host import HostError
from specstack.results.bundle import update_manifest

_GPU = re.compile(r"^(\d+|GPU-[0-9A-Fa-f-]+|MIG-[0-9A-Za-z/-]+)$")
_CORES = re.compile(r"^(\d+)(?:-(\d+))?$")


def _cores(cpuset: str) -> set[int]:
    m = _CORES.match(cpuset)
    if not m:
        raise HostError(f"CPUSETS: {cpuset!r} is not a core (3) or a range of cores (2-3); give one per server, "
                        "separated by commas: CPUSETS=0,1 or CPUSETS=0-3,4-7")
    first, last = int(m.group(1)), int(m.group(2) or m.group(1))
    if last < first:
        raise HostError(f"CPUSETS: the range {cpuset!r} runs backwards; write it low-high ({last}-{first})")
    return set(range(first, last + 1))


def _split(knob: str, text: str, what: str) -> list[str]:
    items = [s.strip() for s in text.split(",")]
    if not text.strip() or "" in items:
        raise HostError(f"{knob}={text!r}: give one {what} per server, separated by commas (e.g. {knob}=0,1)")
    if len(set(items)) != len(items):
        raise HostError(f"{knob}={text}: a slot appears twice; two servers on one "
                        f"{'GPU' if knob == 'GPUS' else 'core'} would measure each other")
    return items


def parse_cpusets(text: str, cores: int) -> list[str]:
    """CPUSETS: one core or range of cores per server, none shared, all on this host."""
    slots, seen = _split("CPUSETS", text, "CPU set"), set()
    for s in slots:
        own = _cores(s)
        if max(own) >= cores:
            raise HostError(f"CPUSETS: {s!r} names core {max(own)}, but this host has {cores} (0-{cores - 1}); "
                            f"give at most {cores} single-core slots")
        if own & seen:
            raise HostError(f"CPUSETS={text}: the CPU sets overlap (core {min(own & seen)}); each server needs "
                            "cores of its own")
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


def run_queue(slots: list[dict[str, str]], methods: list[str], command: list[str]) -> list[str]:
    """Run `command` (its {method}, {index} and the slot's {slot} and {cpuset} filled in) for every method, one
    per slot at a time; the methods whose command failed, in queue order."""
    todo: queue.Queue[str] = queue.Queue()
    for m in methods:
        todo.put(m)
    failed: set[str] = set()

    def worker(index: int, slot: dict[str, str]) -> None:
        while True:
            try:
                method = todo.get_nowait()
            except queue.Empty:
                return
            argv = [a.format(method=method, index=index, **slot) for a in command]
            print(f"=== slot {index} ({slot['slot']}): {method} ===", flush=True)
            proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
            _pump(proc.stdout, method)
            if proc.wait() != 0:
                failed.add(method)

    threads = [threading.Thread(target=worker, args=(i, s), name=f"slot-{i}") for i, s in enumerate(slots)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return [m for m in methods if m in failed]


def parallel(*, platform: str, slots_text: str, cores: int, methods: list[str], command: list[str],
             run_dir: Path, cpusets: str = "") -> list[str]:
    """Check the slots, mark the run parallel in its manifest, run the queue; the failed methods."""
    slots = parse_slots(platform, slots_text, cores, cpusets)
    if not methods:
        raise HostError("no methods to run: set SWEEP_METHODS (and SWEEP_MTP_METHODS)")
    gpu = platform.startswith("gpu")
    update_manifest(run_dir, mode="parallel", slots=[{"gpu": s["slot"], "cpuset": s["cpuset"] or None} if gpu
                                                      else {"cpuset": s["cpuset"]} for s in slots])
    return run_queue(slots, methods, command)
