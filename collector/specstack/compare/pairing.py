"""Which figures of two runs meet, and whether they may be compared.

A pair is one method × task present in both runs (a method is known by its folder name, so `ngram` of run A
meets `ngram` of run B). Per pair, the facts each side recorded are set side by side; every difference is
named, and each one rules out the figures that depend on it (RULES). A fact one side did not record is
"unknown", never a difference: older bundles lack some.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

from specstack.results.reader import EAGER_NOTE, MethodData, RunData

# The figure kinds a difference can rule out.
ACCEPTANCE = "acceptance"  # acceptance rate, mean acceptance length (acceptance phase)
SHAPE = "per-position/histogram"  # per-position rates and histogram: their length is K
SPEED = "speed"  # bench cells: throughput, latency percentiles, bench acceptance length
OUTPUTS = "outputs"  # greedy outputs request by request
ALL = (ACCEPTANCE, SHAPE, SPEED, OUTPUTS)

# fact -> the figure kinds it rules out when the two sides differ. Facts not listed here (vLLM version, model
# runner, the rest of the speculative config) are the change a comparison usually asks about: named, not ruled out.
RULES = {
    "inputs": ALL,  # other prompts: every figure measures something else
    "target": ALL,  # other model
    "synthetic": (ACCEPTANCE, SHAPE),  # synthetic rejection sampling: acceptance is made up
    "K": (SHAPE,),  # a histogram/position vector of another length and meaning
    "hardware": (SPEED,),  # tok/s and latencies do not travel between machines; acceptance does
}


@dataclass
class Difference:
    fact: str
    a: object
    b: object

    @property
    def rules_out(self) -> tuple[str, ...]:
        return RULES.get(self.fact, ())

    def text(self) -> str:
        return f"other {self.fact} ({_show(self.a)} → {_show(self.b)})"


@dataclass
class Pair:
    method: str
    label: str
    task: str
    a: MethodData
    b: MethodData
    differences: list[Difference] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)  # facts one side did not record

    def not_comparable(self, kind: str) -> str | None:
        """ "not comparable: <why>" for a figure kind, None when it may be compared."""
        why = [d.text() for d in self.differences if kind in d.rules_out]
        return "not comparable: " + "; ".join(why) if why else None


def _show(v: object) -> str:
    if isinstance(v, dict):
        return ", ".join(f"{k}={_short(v[k])}" for k in sorted(v)) or "—"
    return "—" if v is None else _short(str(v))


def _short(v: str) -> str:
    """A sha256 by its first 12 hex digits in text (compare.json keeps it whole)."""
    if isinstance(v, str) and len(v) >= 64 and all(c in "0123456789abcdef," for c in v):
        return ",".join(h[:12] for h in v.split(","))
    return v


def model_name(ref: str | None) -> str | None:
    """A model by name: a local folder by its last component (another machine keeps its models elsewhere), a
    hub id as it is."""
    if not ref:
        return None
    return PurePath(ref).name if ref.startswith(("/", ".", "~")) else ref


def task_inputs(manifest: dict[str, Any], task: str) -> dict[str, Any] | None:
    """The sha256 of the task's workload files from the manifest (`inputs`: path -> sha256): the built-in files
    are `<task>.perf.jsonl` and `<task>.acceptance.jsonl`. A user's own files (--workload) are recorded under
    their own names, not the task's: then the run's inputs as a whole stand for the task. None: not recorded."""
    inputs = manifest.get("inputs") or {}
    if not inputs:
        return None
    mine = {PurePath(p).name[len(task) + 1 :]: h for p, h in inputs.items() if PurePath(p).name.startswith(task + ".")}
    return mine or {"all inputs": ",".join(sorted(inputs.values()))}


def hardware(run: RunData, md: MethodData) -> dict[str, Any]:
    """What the run recorded about the machine: the manifest's platform and host, the compose host's CPU or GPU
    facts, the core count of the bench windows. Only recorded facts; the comparison uses the keys on both sides."""
    host = run.manifest.get("host") or {}
    facts = {
        "platform": run.manifest.get("platform"),
        "machine": host.get("machine"),
        "processor": host.get("processor"),
    }
    prov = md.record.provenance_facts.host_facts
    cpu, gpu = prov.get("cpu") or {}, prov.get("gpu")
    facts["cpu model"] = cpu.get("model")
    gpus = (gpu or {}).get("gpus") if isinstance(gpu, dict) else None  # host/gpu.py parse_nvidia_smi
    if gpus:
        facts["gpu"] = ", ".join(sorted(str(g.get("name")) for g in gpus if isinstance(g, dict)))
    cores = {c for w in md.record.window_list if (c := (w.host_load or {}).get("cores")) is not None}
    facts["cores"] = max(cores) if cores else cpu.get("cores")
    return {k: v for k, v in facts.items() if v}


def _spec_rest(md: MethodData) -> dict[str, Any] | None:
    """The speculative config apart from K, models by name."""
    cfg = md.record.speculative_config
    if cfg is None:
        return None
    return {
        k: (model_name(v) if k == "model" and isinstance(v, str) else v)
        for k, v in cfg.items()
        if k != "num_speculative_tokens"
    }


def facts(run: RunData, md: MethodData, task: str) -> dict[str, Any]:
    server = md.record.server_facts
    return {
        "inputs": task_inputs(run.manifest, task),
        "target": model_name(server.target),
        "K": md.k,
        "synthetic": not md.comparable,
        "hardware": hardware(run, md),
        "vLLM version": server.vllm_version or md.record.provenance_facts.vllm_client,
        "model runner": server.model_runner,
        "speculative config": json.dumps(_spec_rest(md), sort_keys=True) if md.speculative else None,
    }


def compare_facts(fa: dict[str, Any], fb: dict[str, Any]) -> tuple[list[Difference], list[str]]:
    diffs, unknown = [], []
    for fact in fa:
        a, b = fa[fact], fb[fact]
        if fact == "hardware":  # only what both sides recorded
            keys = sorted(set(a) & set(b))
            a, b = {k: a[k] for k in keys if a[k] != b[k]}, {k: b[k] for k in keys if a[k] != b[k]}
            if a:
                diffs.append(Difference(fact, a, b))
            continue
        if a is None or b is None:
            if a is not b:  # recorded on one side only: unknown, not a difference
                unknown.append(fact)
            continue
        if a != b:
            diffs.append(Difference(fact, a, b))
    return diffs, unknown


def pairs(run_a: RunData, run_b: RunData) -> list[Pair]:
    """Every method × task present in both runs, in run A's order, with what differs between the sides."""
    out = []
    for name, a in run_a.methods.items():
        b = run_b.methods.get(name)
        if b is None:
            continue
        for task in run_a.tasks:
            if task not in a.task_figures or task not in b.task_figures:
                continue
            diffs, unknown = compare_facts(facts(run_a, a, task), facts(run_b, b, task))
            out.append(Pair(name, a.display_name, task, a, b, diffs, unknown))
    return out


def unmatched(run_a: RunData, run_b: RunData) -> list[str]:
    """What only one run has (methods, method × task), failed methods, and what the reader warned about."""
    notes = []
    for side, run, other in (("A", run_a, run_b), ("B", run_b, run_a)):
        failed = {f.name for f in run.failed if not f.superseded}
        for name in run.methods:
            if name not in other.methods:
                notes.append(f"{name}: only in {side}")
        for name in sorted(failed):
            notes.append(f"{name}: failed in {side} (no figures)")
        notes += [f"{side}: {w}" for w in run.warnings]
        notes += [f"{side}: {md.contradiction_warning}" for md in run.methods.values() if md.contradiction_warning]
        if run.eager_smoke:
            notes.append(f"{side}: {EAGER_NOTE}: {', '.join(run.eager_smoke)}")
    for name in sorted(set(run_a.methods) & set(run_b.methods)):
        ta, tb = set(run_a.methods[name].task_figures), set(run_b.methods[name].task_figures)
        notes += [f"{name} {t}: only in A" for t in sorted(ta - tb)]
        notes += [f"{name} {t}: only in B" for t in sorted(tb - ta)]
    return notes
