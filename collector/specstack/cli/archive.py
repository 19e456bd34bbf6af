"""`specstack pack RUN` (one tar.gz with a checksum list) and `specstack verify ARCHIVE_OR_DIR` (names every
changed, missing or extra file; exit 1 on any)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from specstack.results.archive import pack, verify
from specstack.results.reader import resolve_run_dir


def _cmd_pack(args: argparse.Namespace) -> int:
    run_dir = resolve_run_dir(args.run, args.results_dir)
    out = pack(run_dir, args.out)
    print(json.dumps({"archive": str(out["archive"]), "sha256": out["sha256"], "files": out["files"]}))
    return 0


def _cmd_verify(args: argparse.Namespace) -> int:
    result = verify(args.target)
    for line in result.lines():
        print(line)
    print(
        json.dumps(
            {
                "target": str(result.target),
                "ok": result.ok,
                "checked": result.checked,
                "changed": len(result.changed),
                "missing": len(result.missing),
                "extra": len(result.extra),
                "unsafe": len(result.unsafe),
            }
        )
    )
    return 0 if result.ok else 1


def register(sub) -> None:
    p = sub.add_parser("pack", help="one tar.gz of a run folder with a SHA256SUMS list inside; prints its sha256")
    p.add_argument("run", metavar="RUN_DIR_OR_ID", help="a run folder, or a run id under --results")
    p.add_argument("--out", type=Path, default=None, help="archive path (default: <run>.tar.gz beside the run)")
    p.add_argument(
        "--results",
        dest="results_dir",
        type=Path,
        default=None,
        help="results folder holding run ids (default: $SPECSTACK_RESULTS or results/)",
    )
    p.set_defaults(func=_cmd_pack)
    v = sub.add_parser(
        "verify",
        help="check a packed bundle (archive or unpacked folder) against its SHA256SUMS; "
        "exit 1 naming every changed, missing or extra file",
    )
    v.add_argument(
        "target",
        metavar="ARCHIVE_OR_DIR",
        type=Path,
        help="a .tar.gz written by `specstack pack`, or the folder it was unpacked into",
    )
    v.set_defaults(func=_cmd_verify)
