"""Artifact checks before a server starts: the models a method names exist and fit together.

Reads only config.json files (local folders, or the Hugging Face cache when already downloaded), so a
wrong draft, an EAGLE-3 head built for another target, or MTP on a model without MTP layers fails in
a second instead of after minutes of loading.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

# Config keys that declare MTP layers, by checkpoint family.
MTP_KEYS = ("num_nextn_predict_layers", "mtp_num_hidden_layers", "num_mtp_layers")


def _looks_local(model: str) -> bool:
    return model.startswith(("/", "./", "../", "~")) or Path(model).exists()


def config_of(model: str) -> tuple[dict | None, str]:
    """(config, where) of a model folder or hub id; (None, reason) when it cannot be read offline."""
    if _looks_local(model):
        path = Path(os.path.expanduser(model)) / "config.json"
        if not path.is_file():
            return None, "missing"
        return json.loads(path.read_text()), str(path)
    try:
        from huggingface_hub import try_to_load_from_cache
        cached = try_to_load_from_cache(model, "config.json")
    except Exception:  # noqa: BLE001 - any hub-library problem only means "not checkable here"
        cached = None
    if isinstance(cached, str):
        return json.loads(Path(cached).read_text()), cached
    return None, "not downloaded"


def _verifier(head: dict) -> str | None:
    """The target an EAGLE-3 head was trained for (speculators format or a top-level `verifier`)."""
    verifier = (head.get("speculators_config") or {}).get("verifier") or head.get("verifier") or {}
    return verifier.get("name_or_path")


def _same_model(a: str, b: str, base: Path | None) -> bool:
    if _looks_local(a) or (base is not None and (base / a).exists()):
        a = str((base / a).resolve() if base is not None and not Path(a).is_absolute() else Path(a).resolve())
    if _looks_local(b):
        b = str(Path(b).resolve())
    return a.rstrip("/").lower() == b.rstrip("/").lower()


def check(plan: dict) -> tuple[list[str], list[str]]:
    """(problems, skipped) for a serve plan from serve_args.build()."""
    problems: list[str] = []
    skipped: list[str] = []
    target = plan["target"]
    target_cfg, where = config_of(target)
    if target_cfg is None:
        (problems if where == "missing" else skipped).append(
            f"target {target}: no config.json there; build or download it (tiny models: specstack tiny-models)"
            if where == "missing" else f"target {target}: not checked ({where})")
    spec = plan.get("speculative_config") or {}
    method = spec.get("method")
    draft = spec.get("model")
    draft_cfg = None
    if draft:
        draft_cfg, where = config_of(draft)
        if draft_cfg is None:
            if where == "missing":
                problems.append(f"{method} model {draft}: no config.json there; fix the path in "
                                "services/methods.toml or build/download the model")
            else:
                skipped.append(f"{method} model {draft}: not checked ({where})")
    if method == "draft_model" and draft_cfg and target_cfg and not spec.get("use_heterogeneous_vocab"):
        if draft_cfg.get("vocab_size") != target_cfg.get("vocab_size"):
            problems.append(f"draft vocab_size {draft_cfg.get('vocab_size')} != target vocab_size "
                            f"{target_cfg.get('vocab_size')}; vLLM needs equal vocabularies: pick a draft of the "
                            "target's family")
    if method == "eagle3" and draft_cfg:
        verifier = _verifier(draft_cfg)
        base = Path(draft) if _looks_local(draft) else None
        if verifier is None:
            skipped.append(f"eagle3 head {draft}: its config names no verifier; target match not checked")
        elif not _same_model(verifier, target, base):
            problems.append(f"eagle3 head {draft} was trained for {verifier}, not for the target {target}; "
                            "use the head made for this target (and rerun its baseline)")
    if method == "mtp" and target_cfg is not None:
        if not any(int(target_cfg.get(k) or 0) > 0 for k in MTP_KEYS):
            problems.append(f"target {target} ships no MTP layers ({'/'.join(MTP_KEYS)} unset); MTP needs a "
                            "target trained with them, e.g. XiaomiMiMo/MiMo-7B-Base, compared with its own "
                            "baseline (mtp-baseline)")
    return problems, skipped
