"""reproduce-plan: what `make reproduce RUN=…` needs to re-run a compose run the way a receiving team would.

From the run's manifest and host provenance (what make recorded while each server ran): the methods that
succeeded (in run order) with their K, the model set, platform and prefix-caching setting, and every image
of the stack as a registry digest (`repo@sha256:…`, pulled from its registry, never a local tag). A run whose
images were built locally and never pushed cannot be re-run elsewhere: refused, naming them. The host it ran
on (CPU model and cores, or the GPUs) is compared with this one; a difference is refused unless allowed.

Writes <out>/<run-id>.lock (the images, as an IMAGES_LOCK file) and <out>/<run-id>.plan (shell assignments make
sources). A native run (no host provenance) is not this module's: exit code NATIVE tells make to reproduce it
with the venv's `specstack reproduce`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from specstack.host import HostError
from specstack.host.image_ref import parse_reference
from specstack.results import layout
from specstack.results.files import atomic_write_text

NATIVE = 3  # exit code: a native run, reproduced by `specstack reproduce`
# The images compose takes from the lock (compose.yaml / compose.cpu.yaml). On GPU compose builds the collector
# (and suffix) images from the checkout, so they are not pulled; Grafana is optional on CPU (no image of it can
# be built there): its line is carried over as recorded, pinned or not.
STACK_KEYS = {
    "cpu-container": ("VLLM_IMAGE", "COLLECTOR_IMAGE", "PROMETHEUS_IMAGE"),
    "gpu-container": ("VLLM_IMAGE", "PROMETHEUS_IMAGE", "GRAFANA_IMAGE"),
}
OPTIONAL_KEYS = {"cpu-container": ("GRAFANA_IMAGE",), "gpu-container": ()}
PLATFORMS = {"cpu-container": "cpu", "gpu-container": "gpu"}


@dataclass
class Plan:
    original: str  # the run folder's name under ./results
    platform: str  # make's PLATFORM
    model_set: str
    prefix_caching: bool
    methods: list[tuple[str, str]]  # (method, K override or "")
    images: dict[str, str]  # lock key -> repo@sha256:…
    skipped: list[str] = field(default_factory=list)
    drift: list[str] = field(default_factory=list)


def _json(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise HostError(
            f"{path} cannot be read ({e}); the bundle is incomplete (`specstack verify` names what changed)"
        ) from None


def is_compose_run(run_dir: Path) -> bool:
    return (run_dir / layout.HOST_DIR).is_dir()


def _k(name: str, summary: dict) -> str:
    """make sets K (num_speculative_tokens) per method; any other recorded override cannot be replayed by make."""
    override = summary.get("spec_override") or {}
    extra = sorted(set(override) - {"num_speculative_tokens"})
    if extra:
        raise HostError(
            f"{name} ran with speculative-config overrides {', '.join(extra)}, which `make run` cannot "
            "set; reproduce it natively (specstack reproduce) or re-run it by hand"
        )
    return str(override.get("num_speculative_tokens", ""))


def pinned(key: str, image: dict) -> str:
    """The image as a registry digest reference, or HostError naming why none exists."""
    ref = image.get("ref") or ""
    if parse_reference(ref)["digest"]:
        return ref
    name = parse_reference(ref)["name"]
    digests = image.get("repo_digests") or []
    same = [d for d in digests if d.split("@", 1)[0] == name]
    if same or digests:
        return (same or digests)[0]
    raise HostError(
        f"{key} {ref} was built on the machine that ran the sweep and never pushed, so no registry "
        "holds it: push the images and pin them (`make lock IMAGES_LOCK=…`, docs/reproduce.md) before "
        "a run another team can reproduce"
    )


def _images(run_dir: Path, records: dict[str, dict], platform: str) -> dict[str, str]:
    images: dict[str, str] = {}
    for method, rec in records.items():
        seen = rec.get("images")
        if not seen:
            raise HostError(
                f"host-provenance/{method}.json records no image set (a run made before `make "
                "reproduce` existed): compare a new run with it instead (`specstack compare`)"
            )
        for key in STACK_KEYS[platform] + OPTIONAL_KEYS[platform]:
            if key not in seen:
                if key in OPTIONAL_KEYS[platform]:
                    continue
                raise HostError(f"host-provenance/{method}.json lacks {key}; the bundle is incomplete")
            optional = key in OPTIONAL_KEYS[platform] and not seen[key].get("repo_digests")
            ref = seen[key]["ref"] if optional else pinned(key, seen[key])
            if images.setdefault(key, ref) != ref:
                raise HostError(
                    f"the run used two {key}s ({images[key]} and {ref}); reproduce its methods "
                    "separately (make reproduce … METHODS=…)"
                )
    return images


def _host_drift(records: dict[str, dict], here_cpu: dict | None, here_gpu: dict | None) -> list[str]:
    rec = next(iter(records.values()))
    drift = []
    if rec.get("cpu") and here_cpu:
        for fact in ("model", "cores"):
            if rec["cpu"].get(fact) != here_cpu.get(fact):
                drift.append(f"CPU {fact}: {rec['cpu'].get(fact)} (recorded) → {here_cpu.get(fact)} (here)")
    if rec.get("gpu") and here_gpu is not None:
        names = [g.get("name") for g in (rec["gpu"].get("gpus") or [])]
        now = [g.get("name") for g in (here_gpu.get("gpus") or [])]
        if names and names[:1] != now[:1]:
            drift.append(f"GPU: {names[:1]} (recorded) → {now[:1] or 'none'} (here)")
    return drift


def plan(
    run_dir: Path, *, here_cpu: dict | None = None, here_gpu: dict | None = None, methods: list[str] | None = None
) -> Plan:
    run_dir = Path(run_dir)
    manifest = _json(run_dir / layout.MANIFEST)
    recipe = manifest.get("recipe") or {}
    platform = recipe.get("platform") or manifest.get("platform")
    if platform not in PLATFORMS:
        raise HostError(f"{run_dir.name} ran on platform {platform!r}, not a compose one ({', '.join(PLATFORMS)})")
    chosen, skipped, records = [], [], {}
    for name, entry in (manifest.get("methods") or {}).items():
        if methods is not None and name not in methods:
            continue
        if entry.get("status") != "ok":
            skipped.append(f"{name}: failed in the original (no figures to compare with)")
            continue
        folder = entry.get("dir") or name
        summary = _json(run_dir / folder / layout.SUMMARY_FILE)
        of = summary.get("base_method") or name
        if of != name and not summary.get("baseline_method"):
            # a calibrated parallel sweep's run of a baseline on another slot: make reproduce runs one slot
            skipped.append(f"{name}: the calibration run of {of} on another slot (reproduced once, as {of})")
            continue
        records[name] = _json(run_dir / layout.host_record(name))
        chosen.append((name, _k(name, summary)))
    unknown = sorted(set(methods or []) - set(manifest.get("methods") or {}))
    if unknown:
        raise HostError(f"METHODS names {', '.join(unknown)}, not in {run_dir.name}")
    if not chosen:
        raise HostError(f"{run_dir.name} has no successful method to reproduce")
    return Plan(
        original=run_dir.name,
        platform=PLATFORMS[platform],
        model_set=recipe.get("model_set") or manifest.get("model_set") or "default",
        prefix_caching=bool(recipe.get("prefix_caching")),
        methods=chosen,
        images=_images(run_dir, records, platform),
        skipped=skipped,
        drift=_host_drift(records, here_cpu, here_gpu),
    )


def write(p: Plan, out: Path, run_id: str) -> tuple[Path, Path]:
    """The images as an IMAGES_LOCK file, and the plan as shell assignments (values are single-quoted words)."""
    lock = Path(out) / f"{run_id}.lock"
    atomic_write_text(
        lock,
        f"# make reproduce: the images of {p.original}, by digest\n"
        + "".join(f"{k}={v}\n" for k, v in p.images.items()),
    )
    assignments = {
        "original": p.original,
        "platform": p.platform,
        "model_set": p.model_set,
        "prefix_caching": "1" if p.prefix_caching else "",
        "methods": " ".join(f"{m}:{k}" for m, k in p.methods),
        "images_lock": str(lock),
    }
    for value in assignments.values():
        if "'" in value:
            raise HostError(f"{value!r} cannot be passed to make (a quote in a name)")
    plan_file = Path(out) / f"{run_id}.plan"
    atomic_write_text(plan_file, "".join(f"{k}='{v}'\n" for k, v in assignments.items()))
    return lock, plan_file
