"""`specstack reproduce RUN`: the recorded run again, on this machine, then compared with the original.

1. The recipe (runs/recipe.py) and every method's summary give each method's Options: method, K and overrides,
   folder, session, workload.
2. The original's inputs are checked against the sha256 its manifest recorded and copied into the new run:
   the reproduction measures the very same prompts (never regenerated).
3. The environment is compared with the recorded one (runs/drift.py); any difference stops here, listed,
   unless --allow-drift (the reproduction's manifest then records what differed).
4. The methods run one after another (the sweep loop), then `compare` original → reproduction, and the figures
   are judged by what each can be expected to do on the same machine (docs/reproduce.md):
   exact by design (greedy acceptance sums, per-position counts, histogram, greedy outputs, the bench's
   acceptance length at concurrency 1) must be identical; bench speed within a tolerance.
"""

from __future__ import annotations

import dataclasses
import shutil
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specstack.compare.contents import Comparison
from specstack.compare.rows import SpeedRow
from specstack.config.serving import Runtime
from specstack.config.workloads import sha256
from specstack.errors import UserError
from specstack.pipeline.sweep import run_all
from specstack.results import layout
from specstack.results.bundle import update_manifest
from specstack.results.files import atomic_write_json
from specstack.results.reader import read_manifest, read_summary
from specstack.runs import drift, recipe
from specstack.runs.options import Options

# Two same-machine reproductions of `make demo` (docs/reproduce.md): all 166 exact-by-design figures identical
# both times; bench throughput (one repeat per cell, 2 vCPUs) moved by a median of 16 % and 20 %. A headline
# speed figure further than this from the original is flagged.
SPEED_TOLERANCE = 0.20
# The speed figures judged: throughput and the latency the report's verdicts use (TPOT p50; E2EL p50, which
# stands in where TPOT is degenerate). Tails (p95/p99 from a few requests) and ITL are shown in compare.md only.
JUDGED_SPEED = ("throughput", "tpot_p50", "e2el_p50")
# Bench cells whose spec-decode counts are deterministic by design: one request at a time, greedy, the same
# prompts (batched cells measured identical on CPU too, but batch-variant GPU kernels give no such promise).
EXACT_BENCH_CONCURRENCY = 1


@dataclass
class Plan:
    original: Path
    manifest: dict
    recipe: dict
    not_recorded: list[str]
    entries: list[tuple[str, Options]]
    summaries: dict[str, dict]
    skipped: list[str] = field(default_factory=list)  # methods of the original not reproduced, with why


def plan(
    original: Path,
    *,
    run_id: str,
    results_dir: Path,
    methods: list[str] | None = None,
    models_dir: str | None = None,
    port: int | None = None,
    url: str | None = None,
    watch: dict | None = None,
) -> Plan:
    """`url`: a compose reproduction, one method per server that `make reproduce` started from the recorded
    images (the run must have measured such a server); `watch`: how it is watched (Prometheus, window gauges),
    never part of the recipe."""
    manifest = read_manifest(original)
    rec, missing = recipe.from_manifest(manifest)
    runtime = rec.get("runtime", Runtime.NATIVE)  # as recorded: any name, a member or not
    if runtime != Runtime.NATIVE and url is None:
        raise UserError(
            f"{original.name} measured a server specstack did not start (runtime {runtime!r}); "
            "`specstack reproduce` re-runs native runs only. A compose run is reproduced from the "
            f"repository with `make reproduce RUN=results/{original.name}` (the recorded images, by "
            "digest, on a fresh stack); else compare two runs with `specstack compare`"
        )
    if runtime == Runtime.NATIVE and url is not None:
        raise UserError(f"{original.name} ran natively: reproduce it without --url (specstack starts its servers)")
    base = recipe.options(
        rec,
        run_id=run_id,
        results_dir=results_dir,
        run_dir=original,
        models_dir=models_dir,
        port=port,
        url=url,
        **(watch or {}),
    )
    entries, summaries, skipped = [], {}, []
    for name, entry in (manifest.get("methods") or {}).items():
        if methods is not None and name not in methods:
            continue
        folder = entry.get("dir") or name
        summary = read_summary(original / folder) if entry.get("status") == "ok" else None
        if summary is None or summary.get("status") != "ok":
            skipped.append(f"{name}: failed in the original (no figures to compare with)")
            continue
        entries.append((name, recipe.method_options(base, name, summary)))
        summaries[name] = summary
    unknown = sorted(set(methods or []) - set(manifest.get("methods") or {}))
    if unknown:
        raise UserError(
            f"--methods names {', '.join(unknown)}, not in {original.name} "
            f"(it has {', '.join(manifest.get('methods') or {}) or 'no methods'})"
        )
    if not entries:
        raise UserError(f"{original.name} has no successful method to reproduce")
    return Plan(original, manifest, rec, missing, entries, summaries, skipped)


def copy_inputs(p: Plan, run_dir: Path) -> None:
    """Every recorded input, checked by sha256; the run's own inputs/ copied into the new run (workload files
    outside it are used where they are)."""
    for rel, digest in (p.manifest.get("inputs") or {}).items():
        path = recipe.resolve_file(rel, p.original)
        if not path.exists():
            raise UserError(
                f"input {path} of {p.original.name} is not on this machine; put the file (sha256 "
                f"{digest[:12]}…) back there to reproduce the run"
            )
        if sha256(path) != digest:
            raise UserError(
                f"input {path} changed since {p.original.name} was run (sha256 {sha256(path)[:12]}… "
                f"≠ recorded {digest[:12]}…); restore it: a run on other inputs is not a reproduction"
            )
    inputs, copied = p.original / layout.INPUTS_DIR, run_dir / layout.INPUTS_DIR
    if inputs.is_dir():
        shutil.copytree(inputs, copied, dirs_exist_ok=True)
    # the built-in tasks' files as the reproduction's workload files: the very bytes the original measured
    built_in = {
        t: (copied / layout.perf_input(t), copied / layout.acceptance_input(t))
        for t in p.entries[0][1].tasks
        if t not in p.entries[0][1].workload_files
    }
    missing = [str(f.relative_to(run_dir)) for pair in built_in.values() for f in pair if not f.exists()]
    if missing:
        raise UserError(
            f"{p.original.name}/inputs lacks {', '.join(missing)}; the bundle is incomplete "
            "(`specstack verify` names what changed)"
        )
    p.entries = [(name, _with_files(o, built_in)) for name, o in p.entries]


def _with_files(opts: Options, built_in: dict) -> Options:
    return dataclasses.replace(opts, workload_files={**built_in, **opts.workload_files})


def drifts(p: Plan, env: drift.Environment | None = None) -> tuple[list[drift.Drift], list[str]]:
    env = env or drift.Environment.here()
    first = next(iter(p.entries))[0]
    packages = p.original / (p.manifest["methods"][first].get("dir") or first) / layout.PACKAGES_FILE
    found, unknown = drift.environment(
        p.manifest, packages.read_text().splitlines() if packages.exists() else None, env
    )
    for name, opts in p.entries:
        d, u = drift.method(name, p.summaries[name], opts)
        found += d
        unknown += u
    return found, unknown


def _where(r: Mapping[str, Any]) -> str:  # an acceptance, position, histogram or speed row (compare/rows.py)
    return " ".join(
        str(x)
        for x in (
            r["method"],
            r["task"],
            f"c={r['concurrency']}" if "concurrency" in r else None,
            r["figure"],
            r.get("position"),
        )
        if x is not None
    )


def judge(cmp: Comparison, tolerance: float = SPEED_TOLERANCE) -> dict:
    """Each compared figure against what it can be expected to do on the same machine: exact-by-design figures
    identical, bench speed within `tolerance` (relative change of the median). Not comparable counts as not
    reproduced, with the comparison's reason."""
    exact, speed = [], []
    for r in cmp.acceptance + cmp.positions + cmp.histogram:
        ok = r["verdict"] == "same" or r["verdict"].startswith("n/a")
        exact.append({"figure": _where(r), "a": r["a"], "b": r["b"], "ok": ok, "verdict": r["verdict"]})
    for s in cmp.outputs_summary:
        exact.append(
            {
                "figure": f"{s['method']} {s['task']} greedy outputs",
                "a": s["requests_a"],
                "b": s["requests_b"],
                "ok": s["verdict"] == "same",
                "verdict": s["verdict"],
            }
        )
    for sr in cmp.speed:
        if sr["figure"] == "bench_acceptance_length" and sr["concurrency"] == EXACT_BENCH_CONCURRENCY:
            ok = sr["comparable"] and sr["a"] == sr["b"]
            exact.append(
                {
                    "figure": _where(sr),
                    "a": sr["a"],
                    "b": sr["b"],
                    "ok": ok,
                    "verdict": "same" if ok else sr["verdict"] if not sr["comparable"] else "changed",
                }
            )
        elif sr["figure"] in JUDGED_SPEED:
            speed.append(
                {
                    "figure": _where(sr),
                    "a": sr["a"],
                    "b": sr["b"],
                    "change": sr["relative"],
                    **_judge_speed(sr, tolerance),
                }
            )
    missing = [n for n in cmp.unmatched if "only in A" in n or "failed in B" in n]
    exact_ok = bool(exact) and all(r["ok"] for r in exact)
    speed_ok = all(r["ok"] is not False for r in speed)
    return {
        "exact": exact,
        "speed": speed,
        "tolerance": tolerance,
        "missing": missing,
        "exact_ok": exact_ok,
        "speed_ok": speed_ok,
        "reproduced": exact_ok and speed_ok and not missing,
    }


def _judge_speed(r: SpeedRow, tolerance: float) -> dict:
    """ok: True / False, or None when the figure cannot be judged (said why). With an interval over repeats, a
    change inside it is noise whatever its size; a cell measured on a busy host is not judged (as in the report)."""
    note = r.get("note") or ""
    if not r["comparable"] or r["relative"] is None:
        return {"ok": False, "verdict": r["verdict"]}
    if "busy host" in note:
        return {"ok": None, "verdict": "not judged: " + next(n for n in note.split("; ") if "busy host" in n)}
    if r["figure"].startswith("tpot") and "degenerate" in note:
        return {"ok": None, "verdict": "not judged: TPOT degenerate (e2el_p50 is judged instead)"}
    within = abs(r["relative"]) <= tolerance or r["verdict"] == "within noise"
    return {
        "ok": within,
        "verdict": (
            f"within ±{100 * tolerance:g} %"
            if abs(r["relative"]) <= tolerance
            else "within noise (interval over repeats)"
        )
        if within
        else f"moved {100 * r['relative']:+.1f} % (beyond ±{100 * tolerance:g} %)",
    }


def _continues(p: Plan, run_dir: Path) -> bool:
    """A compose reproduction measures one method per server into one run: a later method continues the run
    its first method began (same original), never another run."""
    if not (run_dir / layout.MANIFEST).exists():
        return False
    began = read_manifest(run_dir).get("reproduction_of") or {}
    if p.entries[0][1].runtime == Runtime.URL and began.get("folder") == p.original.name:
        return True
    raise UserError(f"{run_dir} exists; pick a new --run-id (a reproduction never writes into another run)")


def run(
    p: Plan, *, allow_drift: bool, tolerance: float = SPEED_TOLERANCE, env: drift.Environment | None = None
) -> dict:
    """Check, run, compare, judge. Refuses (UserError) before anything starts when the environment drifted.
    A compose reproduction (url runtime) measures and stops: `make reproduce` compares once every method ran."""
    found, unknown = drifts(p, env)
    if found and not allow_drift:
        raise UserError(
            f"this machine differs from the one {p.original.name} ran on:\n  - "
            + "\n  - ".join(d.text() for d in found)
            + "\nrestore the recorded environment, or pass --allow-drift to run anyway (the "
            "differences are recorded in the reproduction's manifest)"
        )
    opts = p.entries[0][1]
    run_dir = Path(opts.results_dir) / opts.run_id
    continuing = _continues(p, run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    copy_inputs(p, run_dir)
    if not continuing:
        update_manifest(
            run_dir,
            reproduction_of={
                "run_id": p.manifest.get("run_id") or p.original.name,
                "folder": p.original.name,
                "drift": [d.to_dict() for d in found],
                "drift_allowed": bool(found),
                "not_checked": unknown,
                "not_recorded": p.not_recorded,
                "skipped": p.skipped,
                "at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            },
        )
    summaries = run_all(opts, p.entries, port_may_be_held=True, report=opts.runtime != Runtime.URL)
    if opts.runtime == Runtime.URL:
        return {
            "verdict": None,
            "files": {},
            "run_dir": run_dir,
            "failed": [s["method"] for s in summaries if s["status"] != "ok"],
        }
    return conclude(p.original, run_dir, tolerance)


def conclude(original: Path, run_dir: Path, tolerance: float = SPEED_TOLERANCE) -> dict:
    """Compare original → reproduction and judge it; the reproduction's manifest says what drifted and which
    methods were skipped, its methods which failed."""
    manifest = read_manifest(run_dir)
    began = manifest.get("reproduction_of") or {}
    if began.get("folder") != original.name:
        raise UserError(
            f"{run_dir.name} is not a reproduction of {original.name} (its manifest says "
            f"{began.get('folder') or 'it is no reproduction'}); name the run `make reproduce` wrote"
        )
    from specstack.compare.build import compare, default_out, write  # pyplot: only once there is a comparison

    cmp = compare(original, run_dir)
    out = default_out(original, run_dir)
    files = write(cmp, out)
    failed = [name for name, entry in (manifest.get("methods") or {}).items() if entry.get("status") != "ok"]
    verdict = {
        "original": original.name,
        "reproduction": run_dir.name,
        "drift": began.get("drift") or [],
        "not_checked": began.get("not_checked") or [],
        "skipped": began.get("skipped") or [],
        "failed": failed,
        **judge(cmp, tolerance),
    }
    verdict["reproduced"] = verdict["reproduced"] and not verdict["failed"]
    files["verdict"] = atomic_write_json(out / layout.REPRODUCE_VERDICT, verdict)
    return {"verdict": verdict, "files": files, "run_dir": run_dir}
