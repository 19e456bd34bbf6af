"""`parallel`: a sweep's methods on several slots at once (make sweep GPUS=0,1 / PLATFORM=cpu CPUSETS=0,1).

A slot is one GPU (an index or a UUID) or one CPU set (a core or a range of cores). Each slot runs one method
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


def parse_slots(platform: str, text: str, cores: int) -> list[str]:
    """GPUS (gpu) or CPUSETS (cpu): comma-separated, one slot each, no slot shared or repeated."""
    knob = "GPUS" if platform.startswith("gpu") else "CPUSETS"
    slots = [s.strip() for s in text.split(",")]
    if not text.strip() or "" in slots:
        raise HostError(f"{knob}={text!r}: give one {'GPU' if knob == 'GPUS' else 'CPU set'} per server, "
                        f"separated by commas (e.g. {knob}=0,1)")
    if len(set(slots)) != len(slots):
        raise HostError(f"{knob}={text}: a slot appears twice; two servers on one "
                        f"{'GPU' if knob == 'GPUS' else 'core'} would measure each other")
    if knob == "GPUS":
        bad = [s for s in slots if not _GPU.match(s)]
        if bad:
            raise HostError(f"GPUS: {bad[0]!r} is not a GPU index (0) or UUID (GPU-...); see nvidia-smi -L")
        return slots
    seen: set[int] = set()
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


def _pump(stream, prefix: str) -> None:
    for line in stream:
        sys.stdout.write(f"[{prefix}] {line}")
        sys.stdout.flush()


def run_queue(slots: list[str], methods: list[str], command: list[str]) -> list[str]:
    """Run `command` (its {method}, {slot} and {index} filled in) for every method, one per slot at a time;
    the methods whose command failed, in queue order."""
    todo: queue.Queue[str] = queue.Queue()
    for m in methods:
        todo.put(m)
    failed: set[str] = set()

    def worker(index: int, slot: str) -> None:
        while True:
            try:
                method = todo.get_nowait()
            except queue.Empty:
                return
            argv = [a.format(method=method, slot=slot, index=index) for a in command]
            print(f"=== slot {index} ({slot}): {method} ===", flush=True)
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
             run_dir: Path) -> list[str]:
    """Check the slots, mark the run parallel in its manifest, run the queue; the failed methods."""
    slots = parse_slots(platform, slots_text, cores)
    if not methods:
        raise HostError("no methods to run: set SWEEP_METHODS (and SWEEP_MTP_METHODS)")
    kind = "gpu" if platform.startswith("gpu") else "cpuset"
    update_manifest(run_dir, mode="parallel", slots=[{kind: s} for s in slots])
    return run_queue(slots, methods, command)
