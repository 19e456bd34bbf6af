"""Imports point one way (docs/architecture.md, "Which folder imports which"): figures/ and results/ import none
of runs/, report/, compare/ or pipeline/; report/ and compare/ never import runs/; runs/ never imports report/ or
compare/; only cli/ imports pipeline/ (the one folder above both sides), and host/ its standard-library loops
(OPEN_TO); compare/ uses no private name of report/. Read from the source with `ast` (every import: module level, inside a function, under TYPE_CHECKING,
relative), so a violation fails here naming its file and line."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

PACKAGE = Path(__file__).resolve().parents[1] / "collector" / "specstack"
# folder -> the folders it must never import
FORBIDDEN = {
    "figures": {"runs", "report", "compare", "pipeline"},
    "results": {"runs", "report", "compare", "pipeline"},
    "report": {"runs", "pipeline"},
    "compare": {"runs", "pipeline"},
    "runs": {"report", "compare", "pipeline"},
}
# folder -> the only folders that may import it (every other folder and top-level module of the package must not)
ONLY_FROM = {"pipeline": {"cli", "pipeline"}}
# folder -> the modules of an ONLY_FROM folder it may import all the same: make's compose flows (host/) drive the
# loops of pipeline/ that are standard library only and Python 3.8-safe (tests/host/test_cli.py holds them to it)
OPEN_TO = {"host": {"specstack.pipeline.serial", "specstack.pipeline.slots"}}
# folder -> the folder whose private names (a leading underscore: module or attribute) it must not use
NO_PRIVATE = {"compare": "report"}
# Known violations still to remove: (file, imported module). Must only shrink: a fixed one left here fails too.
ALLOWED: set[tuple[str, str]] = set()


@dataclass(frozen=True)
class Violation:
    file: str  # relative to the package's parent: specstack/runs/sweep.py
    line: int
    target: str  # the module (or module.name) imported
    rule: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: imports {self.target} ({self.rule})"


def _module(path: Path, root: Path) -> list[str]:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return parts[:-1] if parts[-1] == "__init__" else parts


def _imported(node: ast.AST, here: list[str], is_package: bool) -> list[tuple[str, str | None]]:
    """(module, name imported from it or None) for an import node; relative imports resolved."""
    if isinstance(node, ast.Import):
        return [(a.name, None) for a in node.names]
    if isinstance(node, ast.ImportFrom):
        if node.level:
            base = here if is_package else here[:-1]
            base = base[: len(base) - (node.level - 1)]
            module = ".".join(base + ([node.module] if node.module else []))
        else:
            module = node.module or ""
        return [(module, a.name) for a in node.names]
    return []


def _folder(dotted: str, package: str) -> str | None:
    parts = dotted.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == package else None


def violations(root: Path = PACKAGE) -> list[Violation]:
    package = root.name
    found = []
    for path in sorted(root.rglob("*.py")):
        here = _module(path, root)
        if len(here) < 2:
            continue
        folder, rel = here[1], str(path.relative_to(root.parent))
        forbidden = FORBIDDEN.get(folder, set()) | {f for f, users in ONLY_FROM.items() if folder not in users}
        tree = ast.parse(path.read_text(), filename=str(path))
        private_of = NO_PRIVATE.get(folder)
        bound: set[str] = set()  # local names bound to a module of the folder whose private names are off limits
        for node in ast.walk(tree):
            for module, name in _imported(node, here, path.name == "__init__.py"):
                # `from specstack import runs` imports the folder itself
                target = f"{module}.{name}" if name and module == package else module
                to = _folder(target, package)
                if {module, f"{module}.{name}"} & OPEN_TO.get(folder, set()):
                    continue
                if to in forbidden:
                    found.append(
                        Violation(
                            rel, node.lineno, f"{module}.{name}" if name else module, f"{folder}/ must not import {to}/"
                        )
                    )
                if private_of and to == private_of:
                    dotted = f"{module}.{name}" if name else module
                    if any(p.startswith("_") and p != "__future__" for p in dotted.split(".")[2:]):
                        found.append(
                            Violation(
                                rel, node.lineno, dotted, f"{folder}/ must not use a private name of {private_of}/"
                            )
                        )
                    if isinstance(node, ast.ImportFrom):
                        bound.update(a.asname or a.name for a in node.names)
        if private_of:
            for node in ast.walk(tree):
                if (
                    isinstance(node, ast.Attribute)
                    and isinstance(node.value, ast.Name)
                    and node.value.id in bound
                    and node.attr.startswith("_")
                ):
                    found.append(
                        Violation(
                            rel,
                            node.lineno,
                            f"{node.value.id}.{node.attr}",
                            f"{folder}/ must not use a private name of {private_of}/",
                        )
                    )
    return found


def test_no_import_points_upward():
    seen = violations()
    new = [str(v) for v in seen if (v.file, v.target) not in ALLOWED]
    assert not new, "imports pointing the wrong way:\n" + "\n".join(new)
    fixed = ALLOWED - {(v.file, v.target) for v in seen}
    assert not fixed, f"no longer imported, drop from ALLOWED: {sorted(fixed)}"


def test_the_walker_finds_every_form_of_import(tmp_path):
    """Each form an upward import can take, in a constructed package: found with its file and line."""
    pkg = tmp_path / "specstack"
    files = {
        "figures/__init__.py": "",
        "figures/a.py": "from specstack.runs import sweep\n",
        "results/b.py": "def f():\n    import specstack.report.build\n",
        "report/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..runs.options import Options\n",
        "report/speed.py": "def _load(): ...\n",
        "compare/d.py": "from specstack import runs\nfrom specstack.report.speed import _load\n",
        "compare/e.py": "from specstack.report import speed\nx = speed._load()\n",
        "runs/f.py": "from specstack.compare.build import compare\n",
        "runs/g.py": "from specstack.results import layout\nfrom specstack.figures import stats\n",  # allowed
        "measure/h.py": "from specstack.pipeline.sweep import sweep\n",
        "cli/i.py": "from specstack.pipeline.sweep import sweep\nfrom specstack.report import build\n",  # allowed
    }
    for name, text in files.items():
        (pkg / name).parent.mkdir(parents=True, exist_ok=True)
        (pkg / name).write_text(text)
    got = sorted(f"{v.file}:{v.line} {v.target}" for v in violations(pkg))
    assert got == [
        "specstack/compare/d.py:1 specstack.runs",
        "specstack/compare/d.py:2 specstack.report.speed._load",
        "specstack/compare/e.py:2 speed._load",
        "specstack/figures/a.py:1 specstack.runs.sweep",
        "specstack/measure/h.py:1 specstack.pipeline.sweep.sweep",
        "specstack/report/c.py:3 specstack.runs.options.Options",
        "specstack/results/b.py:2 specstack.report.build",
        "specstack/runs/f.py:1 specstack.compare.build.compare",
    ]


def test_host_may_import_only_the_loops_open_to_it(tmp_path):
    """host/ reaches pipeline/slots.py in every form of import, and nothing else of pipeline/."""
    pkg = tmp_path / "specstack"
    files = {
        "host/a.py": "from specstack.pipeline.slots import run_queue\nfrom specstack.pipeline import slots\n",
        "host/b.py": "import specstack.pipeline.slots\nfrom specstack.pipeline import sweep\n",
        "host/c.py": "from specstack.pipeline.sweep import run_all\n",
    }
    for name, text in files.items():
        (pkg / name).parent.mkdir(parents=True, exist_ok=True)
        (pkg / name).write_text(text)
    got = sorted(f"{v.file}:{v.line} {v.target}" for v in violations(pkg))
    assert got == [
        "specstack/host/b.py:2 specstack.pipeline.sweep",
        "specstack/host/c.py:1 specstack.pipeline.sweep.run_all",
    ]
