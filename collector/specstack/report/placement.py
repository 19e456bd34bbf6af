"""Where each method ran in a parallel sweep (make sweep GPUS=0,1 / CPUSETS=0,1; manifest `mode: parallel`):
its slot, and whether its baseline ran on the same one. Two GPUs of one model still differ (clocks, thermals,
PCIe), so a speedup measured across GPUs includes that GPU-to-GPU spread; the table says which comparison is
which. A serial run (one GPU or CPU set for every method) has no such section."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from specstack.report.build import Report


def _is_gpu(slot: dict) -> bool:
    return "gpu_uuid" in slot or "error" in slot


def slot_label(slot: dict | None) -> str:
    """GPU 1 (GPU-..., NVIDIA H100 80GB HBM3[, cores 0-15]), or cpuset 0-3; n/a when no slot was recorded."""
    if not slot:
        return "n/a"
    if not _is_gpu(slot):
        return f"cpuset {slot.get('cpuset') or slot.get('asked')}"
    cores = f", cores {slot['cpuset']}" if slot.get("cpuset") else ""
    if slot.get("error"):
        return f"GPU {slot.get('asked')} ({slot['error']}{cores})"
    return f"GPU {slot.get('gpu_index') or slot.get('asked')} ({slot.get('gpu_uuid')}, {slot.get('gpu_name')}{cores})"


def _identity(slot: dict | None):
    """What makes two slots the same: the GPU (its UUID) on GPU, the cores on CPU."""
    if not slot:
        return None
    return (slot.get("gpu_uuid") or slot.get("asked")) if _is_gpu(slot) else slot.get("cpuset")


def placement_rows(rep: Report) -> list[dict]:
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
            same = "same" if _identity(own) == _identity(base) else "different: the speedup includes the spread between them"
        rows.append({"method": name, "slot": slot_label(own), "baseline": md.baseline,
                     "baseline_slot": slot_label(base) if md.baseline else "—", "same_slot": same})
    return rows


def placement(rep: Report) -> list[tuple]:
    if rep.run.manifest.get("mode") != "parallel":
        return []
    return [("h2", "Parallel run: where each method ran"),
            ("p", "The methods of this run ran at the same time, each on its own slot (make sweep GPUS=... or "
                  "CPUSETS=...). A method is compared with the baseline of this run; where the baseline ran on "
                  "another slot, its speedup also holds the difference between the two slots."),
            ("table", ["method", "slot", "vs", "baseline's slot", "same slot"],
             [[r["method"], r["slot"], r["baseline"] or "—", r["baseline_slot"], r["same_slot"]]
              for r in placement_rows(rep)])]
