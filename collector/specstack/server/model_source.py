"""Where a native server's models would come from, checked before it starts: a local folder, a snapshot in the
Hugging Face cache, or the hub when it is reachable. A hub id that is none of these (offline, no cached snapshot,
connection refused, gated without a token) would otherwise cost a minute of vLLM start-up and end in a
connection error; here it is one line naming the fix, before any server or result folder exists.

Local folders are not judged here (server/model_checks.py says when one has no config.json).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from specstack.config.methods import ServePlan

_TRUE = ("1", "true", "yes", "on")
FIX = (
    "use --model-set tiny (local tiny models, built by `specstack tiny-models`), point the model set at local "
    "folders (--models-dir, services/methods.toml), or allow the download (network access to the hub; HF_TOKEN "
    "for gated models)"
)


def looks_local(model: str) -> bool:
    return model.startswith(("/", "./", "../", "~")) or Path(model).exists()


def offline() -> str | None:
    """The variable that forbids downloads, if one is set."""
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        if os.environ.get(name, "").strip().lower() in _TRUE:
            return f"{name}={os.environ[name]}"
    return None


def hub_cache() -> str:
    """The hub cache as the environment names it now (huggingface_hub reads it once, at import)."""
    if os.environ.get("HF_HUB_CACHE"):
        return os.environ["HF_HUB_CACHE"]
    home = os.environ.get("HF_HOME") or os.path.join(os.environ.get("XDG_CACHE_HOME", "~/.cache"), "huggingface")
    return os.path.join(os.path.expanduser(home), "hub")


def endpoint() -> str:
    return os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")


def cached_snapshot(model: str, revision: str | None = None) -> Path | None:
    """The cached snapshot folder holding the model's config.json (named by its commit); None when not cached."""
    from huggingface_hub import try_to_load_from_cache

    try:
        config = try_to_load_from_cache(model, "config.json", cache_dir=hub_cache(), revision=revision)
    except Exception:  # noqa: BLE001 - an id the hub library rejects is simply not cached
        return None
    return Path(config).parent if isinstance(config, str) else None


def cached(model: str, revision: str | None = None) -> bool:
    """A snapshot of the model with its config and weights is in the cache (vLLM can load it offline)."""
    snapshot = cached_snapshot(model, revision)
    if snapshot is None:
        return False
    return (
        any(snapshot.glob("*.safetensors"))
        or any(snapshot.glob("*.bin"))
        or any(snapshot.glob("*.safetensors.index.json"))
    )


def hub_problem(model: str, revision: str | None = None, timeout: float = 5.0) -> str | None:
    """Why the hub cannot serve the model now (None when it can): its model API asked directly (huggingface_hub's
    client would answer from its import-time offline flag), with huggingface_hub's headers (its token, if any)."""
    import requests
    from huggingface_hub.utils import build_hf_headers

    url = f"{endpoint()}/api/models/{model}" + (f"/revision/{revision}" if revision else "")
    try:
        r = requests.get(url, headers=build_hf_headers(), timeout=timeout)
    except requests.RequestException as e:  # connection refused, DNS, timeout, proxy: the hub is not reachable
        return f"{endpoint()} cannot be reached ({type(e).__name__})"
    if r.ok:
        return None
    if r.status_code in (401, 403):
        return f"{endpoint()} answered HTTP {r.status_code} (gated or private: HF_TOKEN must grant access)"
    if r.status_code == 404:
        return f"{endpoint()} answered HTTP 404 (no such model" + (f" or revision {revision!r})" if revision else ")")
    return f"{endpoint()} answered HTTP {r.status_code}"


def models_of(plan: ServePlan) -> list[tuple[str, str, str | None]]:
    """(role, model, revision) of every model a serve plan loads."""
    spec = plan.speculative_config or {}
    found = [("target", plan.target, plan.flags.get("revision"))]
    if spec.get("model"):
        found.append((f"{spec.get('method')} model", spec["model"], spec.get("revision")))
    return found


def problems(plan: ServePlan) -> list[str]:
    """One sentence per model that is neither local, cached nor downloadable now, each naming the fix."""
    out = []
    for role, model, revision in models_of(plan):
        if looks_local(model) or cached(model, revision):
            continue
        why = f"{offline()} forbids downloads" if offline() else hub_problem(model, revision)
        if why:
            out.append(
                f"{role} {model} is neither a local folder nor in the Hugging Face cache ({hub_cache()}), "
                f"and {why}: {FIX}"
            )
    return out
