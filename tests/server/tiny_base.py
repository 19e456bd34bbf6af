"""A tiny base model: a copy of a tiny model (collector/specstack/fixtures/tiny_models.py) whose tokenizer has no
chat template, as a base checkpoint such as MiMo-7B-Base may ship (no chat_template in tokenizer_config.json,
no chat_template.jinja or chat_template.json)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path


def without_chat_template(src: Path, dst: Path) -> Path:
    """Copy the model folder src to dst and remove every chat template from it; returns dst."""
    shutil.copytree(src, dst)
    for name in ("chat_template.jinja", "chat_template.json"):
        (dst / name).unlink(missing_ok=True)
    config = dst / "tokenizer_config.json"
    doc = json.loads(config.read_text())
    doc.pop("chat_template", None)
    config.write_text(json.dumps(doc, indent=2) + "\n")
    return dst
