"""What a run was asked to do, as its manifest records it (`recipe`), and the Options that ask for it again
(`specstack reproduce`). One owner of the mapping both ways, so an option is recorded and replayed alike.

Per-method facts (method, K and overrides, bundle folder, session) live in each method's summary; the recipe
holds what the methods of a run share. Workload files inside the run folder are recorded relative to it, so a
moved bundle still names them.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from specstack.runs.options import Options

# Options fields replayed as recorded. Monitoring (Prometheus, windows exporter), --force and the run id are
# how and where a run is watched or stored, not what it measures: not part of the recipe.
FIELDS: tuple[str, ...] = (
    "runtime",
    "url",
    "model_set",
    "platform",
    "models_dir",
    "port",
    "served_model_name",
    "tasks",
    "datasets",
    "num_prompts",
    "perf_output_len",
    "acceptance_max_tokens",
    "concurrencies",
    "request_rate",
    "slo",
    "repeats",
    "replicate",
    "warmup_requests",
    "acceptance_concurrency",
    "temperatures",
    "samples_per_prompt",
    "turns",
    "skip_bench",
    "quiet_gap",
    "allow_synthetic",
    "allow_mismatch",
    "ready_timeout",
    "request_timeout",
    "port_release_timeout",
)
_TUPLES = ("tasks", "datasets", "concurrencies", "temperatures", "rates")

# --prefix-caching: every method served with enable-prefix-caching. A recipe recorded before the option lists it
# as not recorded; Options' default (off, methods.toml's [common]) is what such a run served, and the drift check
# compares the serve argv anyway.
FIELDS += ("prefix_caching",)
# open-loop cells and the capacity search (runs/load.py). The rates --rates auto derived are in the manifest's
# `load` (the baseline's own capacity on this machine): a reproduction derives its own, as the original did.
FIELDS += (
    "rates",
    "rates_auto",
    "burstiness",
    "rates_max_concurrency",
    "capacity_share",
    "capacity_probes",
    "capacity_resolution",
)


def _portable(path: Path, run_dir: Path) -> str:
    path = Path(path).absolute()
    run_dir = Path(run_dir).absolute()
    return str(path.relative_to(run_dir)) if path.is_relative_to(run_dir) else str(path)


def record(opts: Options, run_dir: Path) -> dict:
    out = {name: getattr(opts, name) for name in FIELDS}
    out.update({name: list(out[name]) for name in _TUPLES})
    out["workload_files"] = {
        task: [_portable(p, run_dir), _portable(a, run_dir)] for task, (p, a) in opts.workload_files.items()
    }
    return out


def from_manifest(manifest: dict) -> tuple[dict, list[str]]:
    """(recipe, what was not recorded). A bundle older than the recipe has its `workload`; the other
    fields then take Options' defaults, and the caller says so."""
    if manifest.get("recipe"):
        recipe = dict(manifest["recipe"])
        missing = [f for f in FIELDS if f not in recipe]
        return recipe, missing
    workload = manifest.get("workload") or {}
    recipe = {k: v for k, v in workload.items() if k in FIELDS}
    recipe.update({k: manifest[k] for k in ("model_set", "platform") if manifest.get(k)})
    recipe["workload_files"] = {}
    return recipe, [f for f in FIELDS if f not in recipe]


def resolve_file(path: str, run_dir: Path) -> Path:
    p = Path(path)
    return p if p.is_absolute() else Path(run_dir) / p


def options(recipe: dict, *, run_id: str, results_dir: Path, run_dir: Path, **overrides) -> Options:
    """The Options of the recorded run under a new run id; `overrides` (e.g. models_dir, port) win."""
    fields = {name: recipe[name] for name in FIELDS if name in recipe}
    fields.update({name: tuple(fields[name]) for name in _TUPLES if name in fields})
    fields["workload_files"] = {
        task: (resolve_file(p, run_dir), resolve_file(a, run_dir))
        for task, (p, a) in (recipe.get("workload_files") or {}).items()
    }
    fields.update({k: v for k, v in overrides.items() if v is not None})
    return Options(method="baseline", run_id=run_id, results_dir=results_dir, **fields)


def method_options(base: Options, folder: str, summary: dict) -> Options:
    """One method's Options as its summary recorded them: method, overrides, folder, session, repeats."""
    replication = summary.get("replication") or {}
    session = replication.get("design") == "sessions"
    method = summary.get("base_method") or summary["method"]
    return dataclasses.replace(
        base,
        method=method,
        spec_override=summary.get("spec_override"),
        bundle_name=folder if folder != method else None,
        repeats=replication.get("repeats_per_session" if session else "repeats") or base.repeats,
        session=replication.get("session") if session else None,
        sessions=replication.get("sessions") if session else None,
    )
