"""`specstack tiny-models`: build the tiny local models of model set `tiny` (fixtures/tiny_models.py)."""

from __future__ import annotations

import argparse
import hashlib
import os
from pathlib import Path

from specstack.fixtures import tiny_models


def _cmd(args: argparse.Namespace) -> int:
    paths = tiny_models.build_all(Path(args.out), force=args.force)
    for name, path in paths.items():
        digest = hashlib.sha256((path / "model.safetensors").read_bytes()).hexdigest()[:12]
        print(f"{name:18} {path}  sha256:{digest}")
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "tiny-models",
        help="build the tiny local models (model set `tiny`)",
        description="Deterministic tiny local models for tests and the demo: no downloads, seconds.",
    )
    p.add_argument(
        "--out",
        default=os.environ.get("SPECSTACK_MODELS", ".specstack/models"),
        help="models folder (default: $SPECSTACK_MODELS or .specstack/models)",
    )
    p.add_argument("--force", action="store_true", help="rebuild even if the folder has this recipe's stamp")
    p.set_defaults(func=_cmd)
