#!/usr/bin/env python3
"""Fetch every model a method's server loads into the Hugging Face cache, before the server starts.

vLLM opens no port until its model is downloaded and loaded, so a first start that downloads ~16 GB inside
the server spends its health window (healthcheck start_period) on the network, and a slow link turns a
good start into an "unhealthy" container whose download is then stopped. make runs this first, as its own
step, in the method's own server image (the cache volume mounted read-write, HF_TOKEN through the compose
secret, HF_TOKEN_PATH), and starts the server only once it has returned:

    python3 /services/fetch_models.py --method eagle3 --model-set default --platform gpu-container

  * the models are the ones services/serve_args.py puts into the serve arguments (target, the draft or
    EAGLE-3 head of --speculative-config), at the `revision` methods.toml pins (else the hub's main);
  * the files are what vLLM 0.32.0 reads: the weights in the one format it picks (the safetensors index's
    files, else the first of *.safetensors, *.bin, *.pt; never `original/`, vLLM's default ignore pattern),
    plus every top-level non-weight file (config, tokenizer, chat template, generation config, remote code);
  * progress: one line per model with the file count and bytes (and how much is already cached), then
    huggingface_hub's own progress bars, then where the snapshot is;
  * local folders (model set `tiny`) need nothing: it says so and never imports huggingface_hub.

Standard library + huggingface_hub (which every vLLM image has); exit status 2 with the reason and the fix
when a model cannot be fetched (gated, no such repo or revision, no network).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import serve_args  # noqa: E402  (the same directory: /services in the containers)

# The weight formats vLLM 0.32.0's default loader tries, in order (model_loader/default_loader.py, load
# format "auto"/"hf", with its .pt fallback), and its default ignore pattern (config/load.py).
WEIGHT_PATTERNS = ("*.safetensors", "*.bin", "*.pt")
SAFE_INDEX = "model.safetensors.index.json"
IGNORED_PREFIXES = ("original/",)
# Never needed to serve: other checkpoint formats, and the pictures of model cards.
NOT_NEEDED = (
    "*.safetensors",
    "*.bin",
    "*.pt",
    "*.pth",
    "*.ckpt",
    "*.h5",
    "*.msgpack",
    "*.onnx",
    "*.onnx_data",
    "*.gguf",
    "*.ot",
    "*.tflite",
    "*.mlmodel",
    "*.npz",
    "*.png",
    "*.jpg",
    "*.jpeg",
    "*.gif",
    "*.webp",
    "*.svg",
    "*.pdf",
    "*.mp4",
)


class FetchError(RuntimeError):
    """A model that cannot be fetched; the message says why and what to do."""


def is_local(model: str) -> bool:
    return model.startswith(("/", "./", "../", "~")) or Path(model).expanduser().exists()


def model_refs(plan: serve_args.ServePlan) -> list[dict]:
    """Every checkpoint the server reads: role, model (hub id or folder), revision, code_revision."""
    flags = plan.flags
    refs = [
        {
            "role": "target",
            "model": plan.target,
            "revision": flags.get("revision"),
            "code_revision": flags.get("code-revision"),
        }
    ]
    tokenizer = flags.get("tokenizer")
    if tokenizer and tokenizer != plan.target:
        refs.append(
            {
                "role": "tokenizer",
                "model": tokenizer,
                "revision": flags.get("tokenizer-revision"),
                "code_revision": None,
            }
        )
    spec = plan.speculative_config or {}
    model = spec.get("model")
    if model and model not in ("ngram", "[ngram]", "ngram_gpu", "suffix"):
        refs.append(
            {
                "role": "speculative",
                "model": model,
                "revision": spec.get("revision"),
                "code_revision": spec.get("code_revision"),
            }
        )
    return refs


def select_files(files: list[str], weight_map: list[str] | None = None) -> list[str]:
    """The repository files vLLM 0.32.0 reads to serve the model, as it picks them (see the module doc)."""
    files = [f for f in files if not f.startswith(IGNORED_PREFIXES)]
    if weight_map:
        weights = sorted(set(weight_map) & set(files))
        missing = sorted(set(weight_map) - set(files))
        if missing:
            raise FetchError(f"{SAFE_INDEX} names files the repository does not have: {', '.join(missing[:5])}")
    else:
        weights = []
        top = [f for f in files if "/" not in f]
        for pattern in WEIGHT_PATTERNS:  # the first format present at the top level, as vLLM's fs.ls does
            if fnmatch.filter(top, pattern):
                weights = sorted(fnmatch.filter(files, pattern))
                break
    others = [f for f in files if "/" not in f and not any(fnmatch.fnmatch(f, p) for p in NOT_NEEDED)]
    return sorted(set(weights) | set(others))


def human(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1000
    return f"{n:.1f} GB"


def _explain(repo: str, revision: str | None, e: Exception) -> str:
    name = type(e).__name__
    if name == "GatedRepoError" or " 401 " in f" {e} " or "401 Client Error" in str(e):
        return (
            f"{repo} is gated or needs a token: accept its licence on https://huggingface.co/{repo} and "
            "export HF_TOKEN=hf_... in the shell that runs make (it reaches this container as a secret)"
        )
    if name == "RepositoryNotFoundError":
        return f"no repository {repo} on the Hugging Face Hub (or it is private): fix the id in services/methods.toml"
    if name == "RevisionNotFoundError":
        return (
            f"{repo} has no revision {revision!r}: fix `revision` in services/methods.toml (a 40-hex commit; "
            "docs/gpu.md says how to find one)"
        )
    if name in ("LocalEntryNotFoundError", "OfflineModeIsEnabled"):
        return f"{repo} is not in the cache and HF_HUB_OFFLINE is set: unset it once so the model can be fetched"
    return (
        f"fetching {repo} failed ({name}: {str(e).strip()[:300]}); check the network to huggingface.co "
        "(or HF_ENDPOINT), then run make again: files already fetched stay in the cache"
    )


def _token():
    from huggingface_hub import get_token

    return get_token()  # HF_TOKEN, else the file at HF_TOKEN_PATH (the compose secret); empty = none


def fetch_hub(ref: dict, *, out=sys.stdout) -> dict:
    """Download one hub model's serving files into the cache; returns what was fetched."""
    from huggingface_hub import HfApi, hf_hub_download, snapshot_download, try_to_load_from_cache

    repo, revision = ref["model"], ref["revision"]
    offline = str(os.environ.get("HF_HUB_OFFLINE", "")).lower() in ("1", "true", "yes", "on")
    t0 = time.monotonic()
    try:
        if offline:
            path = snapshot_download(repo, revision=revision, local_files_only=True)
            print(
                f"fetch: {ref['role']} {repo}: HF_HUB_OFFLINE is set; the cache has it ({path})", file=out, flush=True
            )
            return {"model": repo, "snapshot": Path(path).name, "path": path, "bytes": None}
        token = _token()
        info = HfApi(token=token).model_info(repo, revision=revision, files_metadata=True)
        sizes = {s.rfilename: (s.size or 0) for s in (info.siblings or [])}
        weight_map = None
        if SAFE_INDEX in sizes:
            index = hf_hub_download(repo, SAFE_INDEX, revision=revision, token=token)
            weight_map = list(json.loads(Path(index).read_text()).get("weight_map", {}).values()) or None
        files = select_files(list(sizes), weight_map)
        total = sum(sizes[f] for f in files)
        cached = sum(sizes[f] for f in files if isinstance(try_to_load_from_cache(repo, f, revision=info.sha), str))
        pinned = (
            "pinned"
            if revision and revision == info.sha
            else f"NOT PINNED: {revision or 'main'} is {info.sha} today (services/methods.toml, docs/gpu.md)"
        )
        print(
            f"fetch: {ref['role']} {repo} @ {info.sha} ({pinned}): {len(files)} files, {human(total)}"
            f"{f', {human(cached)} already in the cache' if cached else ''}",
            file=out,
            flush=True,
        )
        # The revision as asked (None = main): the cache then maps it to the commit (refs/), as vLLM's own
        # lookups and the pre-flight's expect.
        path = snapshot_download(repo, revision=revision, allow_patterns=files, token=token)
    except FetchError as e:
        raise FetchError(f"{repo}: {e}") from None
    except Exception as e:  # noqa: BLE001 - huggingface_hub raises many types; each gets its explanation
        raise FetchError(_explain(repo, revision, e)) from None
    seconds = time.monotonic() - t0
    print(f"fetch: {ref['role']} {repo} is in the cache: {path} ({seconds:.0f} s)", file=out, flush=True)
    return {"model": repo, "snapshot": info.sha, "path": path, "bytes": total}


def fetch(plan: serve_args.ServePlan, *, out=sys.stdout) -> list[dict]:
    fetched = []
    for ref in model_refs(plan):
        if is_local(ref["model"]):
            where = Path(ref["model"]).expanduser()
            state = "" if where.is_dir() else " (not there: pre-flight says what to do)"
            print(
                f"fetch: {ref['role']} {ref['model']} is a local folder{state}: nothing to download",
                file=out,
                flush=True,
            )
            continue
        fetched.append(fetch_hub(ref, out=out))
    if not fetched:
        print(
            f"fetch: {plan.method} ({plan.model_set}) reads local folders only: no download, the network is not used",
            file=out,
            flush=True,
        )
    return fetched


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--method", required=True)
    p.add_argument("--model-set", default=os.environ.get("SPECSTACK_MODEL_SET", "default"))
    p.add_argument("--platform", default=os.environ.get("SPECSTACK_PLATFORM", "gpu-container"))
    p.add_argument("--spec-override", default=os.environ.get("SPECSTACK_SPEC_OVERRIDE") or None)
    a = p.parse_args(argv)
    try:
        override = json.loads(a.spec_override) if a.spec_override else None
        cfg = serve_args.load()
        method = serve_args.resolve_method(cfg, a.method)
        if serve_args.SPEC_KEY not in cfg["methods"][method]:
            override = None  # K applies to speculative methods only (as make passes it)
        plan = serve_args.build(
            method, model_set_name=a.model_set, platform=a.platform, spec_override=override, cfg=cfg
        )
        fetch(plan)
    except (serve_args.MethodError, json.JSONDecodeError) as e:
        print(f"fetch: {e}", file=sys.stderr)
        return 2
    except FetchError as e:
        print(f"fetch: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
