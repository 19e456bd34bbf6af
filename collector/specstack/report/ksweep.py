"""The K sweep section: the variants `<method>-k<K>` of one method family side by side, and the smallest K
beyond which TPOT stops improving."""
from __future__ import annotations

import json
import re
from pathlib import Path

from specstack.report import stats as st
from specstack.results.reader import MethodData, RunData

_K_SUFFIX = re.compile(r"^(?P<base>.+)-k(?P<k>\d+)$")


def k_family(md: MethodData) -> str:
    """The method a K variant belongs to: summary["base_method"] when run.py records it, else the folder
    name without a `-k<K>` suffix."""
    if md.summary.get("base_method"):
        return md.summary["base_method"]
    m = _K_SUFFIX.match(md.name)
    return m.group("base") if m else md.name


def ksweep_rows(run: RunData, speed: list[dict]) -> list[dict]:
    families: dict[str, dict[int, MethodData]] = {}
    for md in run.methods.values():
        if not md.speculative or md.k is None:
            continue
        fam = families.setdefault(k_family(md), {})
        if md.k not in fam or _K_SUFFIX.match(md.name):   # prefer the explicit <method>-k<K> folder
            fam[md.k] = md
    rows = []
    for fam, by_k in sorted(families.items()):
        if len(by_k) < 2:
            continue
        for task in run.tasks:
            for c in sorted({r["concurrency"] for r in speed if r["method"] in {m.name for m in by_k.values()}}):
                tpot_by_k = {}
                entries = []
                for k, md in sorted(by_k.items()):
                    r = next((x for x in speed if x["method"] == md.name and x["task"] == task
                              and x["concurrency"] == c), None)
                    if r is None:
                        continue
                    acc = (md.tasks.get(task) or {})
                    tpot_by_k[k] = r["tpot_p50_ms"]
                    entries.append({"family": fam, "task": task, "concurrency": c, "k": k, "method": md.name,
                                    "tpot_p50_ms": r["tpot_p50_ms"], "baseline_tpot_p50_ms": r["baseline_tpot_p50_ms"],
                                    "tpot_speedup": r["tpot_speedup"], "output_throughput": r["output_throughput"],
                                    "bench_acceptance_length": r["bench_acceptance_length"],
                                    "acceptance_phase_mean_length": acc.get("mean_acceptance_length")
                                    if acc.get("num_draft_tokens") else None,
                                    "spec_override": json.dumps(md.summary.get("spec_override"), sort_keys=True)})
                if len(tpot_by_k) < 2:
                    continue
                stop = st.gain_stop(tpot_by_k)
                note = ("best TPOT at the largest K tested: no plateau yet, try larger K" if stop == max(tpot_by_k)
                        else f"K above {stop} bought < {st.GAIN_TOLERANCE:.0%} TPOT")
                for e in entries:
                    e["gain_stops_at_k"] = stop
                    e["gain_note"] = note
                rows.extend(entries)
    return rows


def gain_summary(run_dir: Path) -> list[dict]:
    """Where the gain stops, per method family, task and concurrency (from the report's K sweep table)."""
    from specstack.report.build import build  # the report builds on this module
    rep = build(run_dir, with_plots=False)
    seen, out = set(), []
    for r in rep.ksweep:
        key = (r["family"], r["task"], r["concurrency"])
        if key not in seen:
            seen.add(key)
            out.append({"method": r["family"], "task": r["task"], "concurrency": r["concurrency"],
                        "gain_stops_at_k": r["gain_stops_at_k"]})
    return out
