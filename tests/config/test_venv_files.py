"""The CPU venv is installed by uv, which unpacks wheels in parallel (collector/setup_venv.sh): where two
distributions write the same file, which copy remains would depend on timing (the GPU lock has such files, so it
is installed by pip). This venv's distributions must not share a file."""

from __future__ import annotations

import csv
import sys
from collections import defaultdict
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit


def shared_files(site_packages: Path) -> dict[str, list[str]]:
    """Each file (by its path in RECORD) that more than one installed distribution lists, with their names."""
    owners: dict[str, list[str]] = defaultdict(list)
    for record in sorted(site_packages.glob("*.dist-info/RECORD")):
        dist = record.parent.name
        for row in csv.reader(record.read_text().splitlines()):
            path = row[0] if row else ""
            if path and ".dist-info/" not in path and "__pycache__" not in path:
                owners[path].append(dist)
    return {path: dists for path, dists in owners.items() if len(dists) > 1}


def test_no_file_of_the_venv_belongs_to_two_distributions():
    site = next(Path(p) for p in sys.path if p.endswith("site-packages") and Path(p).is_dir())
    assert len(list(site.glob("*.dist-info/RECORD"))) > 100  # the real venv, not an empty one
    assert shared_files(site) == {}


def test_a_file_two_distributions_write_is_named(tmp_path):
    for dist, files in {"a-1.dist-info": ["pkg/x.py", "a/y.py"], "b-2.dist-info": ["pkg/x.py"]}.items():
        (tmp_path / dist).mkdir()
        (tmp_path / dist / "RECORD").write_text("".join(f"{f},sha256=0,1\n" for f in files) + f"{dist}/RECORD,,\n")
    assert shared_files(tmp_path) == {"pkg/x.py": ["a-1.dist-info", "b-2.dist-info"]}
