"""Artifact checks before a server starts: the models a method names exist and fit together.

Reads only config.json and tokenizer files (local folders, or the Hugging Face cache when already downloaded),
so a wrong draft, an EAGLE-3 head built for another target, MTP on a model without MTP layers, or a target whose
tokenizer has no chat template (every acceptance request, sent to /v1/chat/completions, would get HTTP 400)
fails in a second instead of after minutes of loading.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from specstack.server.model_source import looks_local

if TYPE_CHECKING:
    from specstack.config.methods import ServePlan

# Config keys that declare MTP layers, by checkpoint family.
MTP_KEYS = ("num_nextn_predict_layers", "mtp_num_hidden_layers", "num_mtp_layers")
# vLLM's own template that renders each message's content as written (vllm/transformers_utils/chat_templates/,
# found by name by --chat-template): a base model's prompt as /v1/completions would send it.
PLAIN_TEMPLATE = "template_basic.jinja"


def config_of(model: str, revision: str | None = None) -> tuple[dict | None, str]:
    """(config, where) of a model folder or hub id (at a revision: None = main); (None, reason) when it cannot be
    read offline."""
    if looks_local(model):
        path = Path(os.path.expanduser(model)) / "config.json"
        if not path.is_file():
            return None, "missing"
        return json.loads(path.read_text()), str(path)
    try:
        from huggingface_hub import try_to_load_from_cache

        cached = try_to_load_from_cache(model, "config.json", revision=revision)
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
    if looks_local(a) or (base is not None and (base / a).exists()):
        a = str((base / a).resolve() if base is not None and not Path(a).is_absolute() else Path(a).resolve())
    if looks_local(b):
        b = str(Path(b).resolve())
    return a.rstrip("/").lower() == b.rstrip("/").lower()


def check(plan: ServePlan) -> tuple[list[str], list[str]]:
    """(problems, skipped) for a serve plan from serve_args.build()."""
    problems: list[str] = []
    skipped: list[str] = []
    target = plan.target
    target_cfg, where = config_of(target, plan.flags.get("revision"))
    if target_cfg is None:
        (problems if where == "missing" else skipped).append(
            f"target {target}: no config.json there; build or download it (tiny models: specstack tiny-models)"
            if where == "missing"
            else f"target {target}: not checked ({where})"
        )
    spec = plan.speculative_config or {}
    method = spec.get("method")
    draft = spec.get("model")
    draft_cfg = None
    if draft:
        draft_cfg, where = config_of(draft, spec.get("revision"))
        if draft_cfg is None:
            if where == "missing":
                problems.append(
                    f"{method} model {draft}: no config.json there; fix the path in "
                    "services/methods.toml or build/download the model"
                )
            else:
                skipped.append(f"{method} model {draft}: not checked ({where})")
    if (
        method == "draft_model"
        and draft_cfg
        and target_cfg
        and not spec.get("use_heterogeneous_vocab")
        and draft_cfg.get("vocab_size") != target_cfg.get("vocab_size")
    ):
        problems.append(
            f"draft vocab_size {draft_cfg.get('vocab_size')} != target vocab_size "
            f"{target_cfg.get('vocab_size')}; vLLM needs equal vocabularies: pick a draft of the "
            "target's family"
        )
    if method == "eagle3" and draft and draft_cfg:  # draft_cfg is read only for a draft
        verifier = _verifier(draft_cfg)
        base = Path(draft) if looks_local(draft) else None
        if verifier is None:
            skipped.append(f"eagle3 head {draft}: its config names no verifier; target match not checked")
        elif not _same_model(verifier, target, base):
            problems.append(
                f"eagle3 head {draft} was trained for {verifier}, not for the target {target}; "
                "use the head made for this target (and rerun its baseline)"
            )
    if method == "mtp" and target_cfg is not None and not any(int(target_cfg.get(k) or 0) > 0 for k in MTP_KEYS):
        problems.append(
            f"target {target} ships no MTP layers ({'/'.join(MTP_KEYS)} unset); MTP needs a "
            "target trained with them, e.g. XiaomiMiMo/MiMo-7B-Base, compared with its own "
            "baseline (mtp-baseline)"
        )
    if target_cfg is not None:
        problem, skip = chat_template_check(plan)
        problems += [problem] if problem else []
        skipped += [skip] if skip else []
    return problems, skipped


# --- chat template -------------------------------------------------------------------------------------------


def tokenizer_folder(model: str, revision: str | None) -> tuple[Path | None, str]:
    """The folder holding a model's tokenizer files (local, or its snapshot in the Hugging Face cache)."""
    if looks_local(model):
        path = Path(os.path.expanduser(model))
        if (path / "tokenizer_config.json").is_file() or (path / "tokenizer.json").is_file():
            return path, str(path)
        return None, f"no tokenizer files in {path}"
    try:
        from huggingface_hub import try_to_load_from_cache

        cached = try_to_load_from_cache(model, "tokenizer_config.json", revision=revision)
    except Exception:  # noqa: BLE001 - any hub-library problem only means "not checkable here"
        cached = None
    if isinstance(cached, str):
        return Path(cached).parent, f"{model} (Hugging Face cache)"
    return None, "its tokenizer files are not downloaded yet"


def chat_template_source(folder: Path) -> str | None:
    """Which file of a tokenizer folder carries its chat template (transformers' three places), or None."""
    config = folder / "tokenizer_config.json"
    if config.is_file():
        template = json.loads(config.read_text()).get("chat_template")
        if template:  # a string, or a list of named templates
            return "tokenizer_config.json (chat_template)"
    jinja = folder / "chat_template.jinja"
    if jinja.is_file() and jinja.read_text().strip():
        return "chat_template.jinja"
    processor = folder / "chat_template.json"
    if processor.is_file() and json.loads(processor.read_text()).get("chat_template"):
        return "chat_template.json"
    return None


def _vllm_fallback(model_type: str | None, tokenizer: str) -> bool:
    """vLLM 0.32.0 brings its own template for a few model types (vision encoders mostly)."""
    if not model_type:
        return False
    try:
        from vllm.transformers_utils.chat_templates import get_chat_template_fallback_path
    except ImportError:
        return False
    return get_chat_template_fallback_path(model_type, tokenizer) is not None


def _given_template_problem(given: str) -> str | None:
    """A --chat-template vLLM itself cannot load (a path-like name that is neither a file nor one of its own)."""
    try:
        from vllm.renderers.chat_utils import load_chat_template
    except ImportError:
        return None
    try:
        load_chat_template(given)
    except Exception as e:  # noqa: BLE001 - VLLMValidationError, OSError...: each means the server would not start
        return (
            f"--chat-template {given!r}: vLLM 0.32.0 cannot load it ({str(e).strip()[:300]}); give a file "
            f"that exists where the server runs, or one of vLLM's own by name, e.g. {PLAIN_TEMPLATE!r}"
        )
    return None


def _methods_serving(plan: ServePlan) -> list[str]:
    """The methods that serve the same model as this plan's (a comparison needs the same prompts on both)."""
    try:
        from specstack.config.methods import load

        cfg = load()
        key = cfg["methods"][plan.method].get("target", "target")
        return [m for m, entry in cfg["methods"].items() if entry.get("target", "target") == key]
    except Exception:  # noqa: BLE001 - only the wording of the fix depends on it
        return [plan.method]


def chat_template_check(plan: ServePlan) -> tuple[str | None, str | None]:
    """(problem, skipped): the acceptance phase sends /v1/chat/completions, which vLLM answers with HTTP 400
    ("default chat template is no longer allowed") for a tokenizer without a chat template and no
    --chat-template. Checked once the tokenizer files are on disk (local, or fetched into the cache)."""
    flags = plan.flags
    given = flags.get("chat-template")
    if given:
        return _given_template_problem(str(given)), None
    tokenizer = flags.get("tokenizer") or plan.target
    revision = flags.get("tokenizer-revision") or flags.get("revision")
    folder, where = tokenizer_folder(tokenizer, revision)
    if folder is None:
        return None, f"chat template of {tokenizer}: not checked ({where})"
    if chat_template_source(folder):
        return None, None
    target_cfg, _ = config_of(plan.target, flags.get("revision"))
    model_type = (target_cfg or {}).get("model_type")
    if _vllm_fallback(model_type, tokenizer):
        return None, None
    serving = _methods_serving(plan)
    return (
        f"{tokenizer} ships no chat template (no chat_template in tokenizer_config.json, no "
        f"chat_template.jinja or chat_template.json{f', and vLLM 0.32.0 has none for model_type {model_type!r}' if model_type else ''}"
        "): every acceptance request goes to /v1/chat/completions, and vLLM would answer each with HTTP 400 "
        '("default chat template is no longer allowed"). Fix: give the server a template with vLLM\'s '
        f'--chat-template: in services/methods.toml add chat-template = "{PLAIN_TEMPLATE}" to the `flags` '
        f"of {' and '.join(serving)} (vLLM's own template: each prompt as written, as /v1/completions would "
        "send it, right for a base model; the same on both sides of the comparison), or the path of a "
        "template of your own"
    ), None
