"""Where each method ran in a parallel sweep (make sweep GPUS=0,1 / CPUSETS=0,1; manifest `mode: parallel`):
its slot, and whether its baseline ran on the same one. Two GPUs of one model still differ (clocks, thermals,
PCIe), so a speedup measured across GPUs includes that GPU-to-GPU spread; the table says which comparison is
which. A serial run (one GPU or CPU set for every method) has no such section.

A calibrated run (make sweep ... CALIBRATE=1, manifest `calibration: true`) measured each baseline on every slot
(`<baseline>-slot<i>` beside `<baseline>`), and each method against the run on its own slot: the section then
shows the slot-to-slot spread of the baseline and, beside each method's speedup, the range of speedups it would
show against every slot's baseline, so a reader sees whether the spread could carry the result."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from specstack.report import marks
from specstack.report.format import num, pct, times
from specstack.report.render import Block

if TYPE_CHECKING:
    from specstack.report.contents import Report


def _is_gpu(slot: dict[str, Any]) -> bool:
    return "gpu_uuid" in slot or "error" in slot


def slot_label(slot: dict[str, Any] | None) -> str:
    """GPU 1 (GPU-..., NVIDIA H100 80GB HBM3[, cores 0-15]), or cpuset 0-3; n/a when no slot was recorded."""
    if not slot:
        return "n/a"
    if not _is_gpu(slot):
        return f"cpuset {slot.get('cpuset') or slot.get('asked')}"
    cores = f", cores {slot['cpuset']}" if slot.get("cpuset") else ""
    if slot.get("error"):
        return f"GPU {slot.get('asked')} ({slot['error']}{cores})"
    return f"GPU {slot.get('gpu_index') or slot.get('asked')} ({slot.get('gpu_uuid')}, {slot.get('gpu_name')}{cores})"


def _identity(slot: dict[str, Any] | None) -> object:
    """What makes two slots the same: the GPU (its UUID) on GPU, the cores on CPU."""
    if not slot:
        return None
    return (slot.get("gpu_uuid") or slot.get("asked")) if _is_gpu(slot) else slot.get("cpuset")


def placement_rows(rep: Report) -> list[dict[str, Any]]:
    entries = rep.run.manifest.get("methods") or {}
    rows = []
    for name, md in rep.run.methods.items():
        own = (entries.get(name) or {}).get("slot")
        base = (entries.get(md.baseline) or {}).get("slot") if md.baseline else None
        if not md.baseline:
            same = "—"
        elif _identity(own) is None or _identity(base) is None:
            same = "unknown (a slot was not recorded)"
        else:
            same = (
                "same"
                if _identity(own) == _identity(base)
                else "different: the speedup includes the spread between them"
            )
        rows.append(
            {
                "method": name,
                "slot": slot_label(own),
                "baseline": md.baseline,
                "baseline_slot": slot_label(base) if md.baseline else "—",
                "same_slot": same,
            }
        )
    return rows


def _calibrations(rep: Report) -> dict[str, list[str]]:
    """Each baseline measured on more than one slot -> its results, slot order (<b>, <b>-slot1, ...)."""
    groups: dict[str, list[str]] = {}
    for name, md in rep.run.methods.items():
        if not md.baseline:
            groups.setdefault(md.record.base_method or name, []).append(name)
    return {b: sorted(names, key=lambda n: (n != b, len(n), n)) for b, names in groups.items() if len(names) > 1}


def _throughput(rep: Report) -> dict[tuple[str, str, int], float]:
    return {
        (r["method"], r["task"], r["concurrency"]): r["output_throughput"]
        for r in rep.speed
        if r.get("load", "concurrency") == "concurrency" and r.get("output_throughput")
    }


def spread_rows(rep: Report) -> list[dict[str, Any]]:
    """Per baseline, task and concurrency: its output throughput on every slot and (fastest / slowest - 1)."""
    tput, rows = _throughput(rep), []
    for base, names in _calibrations(rep).items():
        points = sorted({(t, c) for (m, t, c) in tput if m in names}, key=lambda p: (p[0], p[1] or 0))
        for task, conc in points:
            per = {n: tput.get((n, task, conc)) for n in names}
            vals = [v for v in per.values() if v]
            rows.append(
                {
                    "baseline": base,
                    "task": task,
                    "concurrency": conc,
                    "per_slot": per,
                    "spread": max(vals) / min(vals) - 1 if len(vals) > 1 else None,
                }
            )
    return rows


def speedup_rows(rep: Report) -> list[dict[str, Any]]:
    """Each method's throughput speedup against the baseline on its own slot, and its range against the baseline
    measured on every slot."""
    tput, groups, rows = _throughput(rep), _calibrations(rep), []
    member = {n: names for names in groups.values() for n in names}
    for r in rep.speed:
        if r.get("role") != "spec" or r.get("load", "concurrency") != "concurrency" or r["baseline"] not in member:
            continue
        others = [
            r["output_throughput"] / b
            for n in member[r["baseline"]]
            if r.get("output_throughput") and (b := tput.get((n, r["task"], r["concurrency"])))
        ]
        rows.append(
            {
                "method": r["method"],
                "task": r["task"],
                "concurrency": r["concurrency"],
                "baseline": r["baseline"],
                "speedup": r.get("throughput_speedup"),
                "marks": marks.suffix(r, throughput=True),  # as the speed table marks the same ratio
                "low": min(others) if others else None,
                "high": max(others) if others else None,
            }
        )
    return rows


def _calibration(rep: Report) -> list[Block]:
    if not rep.run.manifest.get("calibration"):
        return []
    spread, speedups = spread_rows(rep), speedup_rows(rep)
    if not spread:
        return [
            (
                "p",
                "Calibration was asked for (CALIBRATE=1), but no baseline has results from two slots: "
                "the slot-to-slot spread is unknown (see the failed methods above).",
            )
        ]
    slots = rep.run.manifest.get("methods") or {}
    return [
        ("h3", "Calibration: the baseline on every slot"),
        (
            "p",
            "Each baseline ran on every slot; each method is compared with the baseline of its own slot. "
            "Spread = fastest / slowest slot's output throughput − 1. A speedup inside the range of the "
            "last column cannot be told apart from the slots' difference.",
        ),
        (
            "table",
            ["baseline", "task", "c", "output tok/s per slot", "spread"],
            [
                [
                    r["baseline"],
                    r["task"],
                    r["concurrency"],
                    "; ".join(
                        f"{slot_label((slots.get(n) or {}).get('slot'))}: {num(v, 1)}" for n, v in r["per_slot"].items()
                    ),
                    pct(r["spread"]),
                ]
                for r in spread
            ],
        ),
        (
            "table",
            ["method", "task", "c", "vs", "throughput speedup (same slot)", "vs every slot's baseline"],
            [
                [
                    r["method"],
                    r["task"],
                    r["concurrency"],
                    r["baseline"],
                    times(r["speedup"]) + r["marks"],
                    f"{num(r['low'])}–{num(r['high'])}×" if r["low"] is not None else "n/a",
                ]
                for r in speedups
            ],
        ),
    ]


def placement(rep: Report) -> list[Block]:
    if rep.run.manifest.get("mode") != "parallel":
        return []
    return [
        ("h2", "Parallel run: where each method ran"),
        (
            "p",
            "The methods of this run ran at the same time, each on its own slot (make sweep GPUS=... or "
            "CPUSETS=...). A method is compared with the baseline of this run; where the baseline ran on "
            "another slot, its speedup also holds the difference between the two slots.",
        ),
        (
            "table",
            ["method", "slot", "vs", "baseline's slot", "same slot"],
            [
                [r["method"], r["slot"], r["baseline"] or "—", r["baseline_slot"], r["same_slot"]]
                for r in placement_rows(rep)
            ],
        ),
        *_calibration(rep),
    ]
