"""`targets`: the file Prometheus's file_sd reads to find the method's server (labels method and run_id)."""

from __future__ import annotations

import json
from pathlib import Path

from specstack.results.files import atomic_write_text


def write_targets(path: Path, target: str | None, labels: dict[str, str]) -> Path:
    """The file Prometheus's file_sd reads: one target with labels, or [] (no server) when target is None."""
    groups = [] if target is None else [{"targets": [target], "labels": labels}]
    return atomic_write_text(Path(path), json.dumps(groups) + "\n")
