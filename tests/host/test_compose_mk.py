"""services/compose.mk stays a list of one-line calls of the compose lifecycle (collector/specstack/host/lifecycle.py):
no target's recipe is longer than 5 lines (issue 31: orchestration in one Python module, not in make)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
MAX_LINES = 5
RULE = re.compile(r"^([A-Za-z0-9_.%/ -]+?)\s*:(?![=:])")


def recipes(text: str) -> dict[str, int]:
    """Each rule's targets -> the physical lines of its recipe (tab-led lines, continuations included)."""
    out: dict[str, int] = {}
    current = None
    for line in text.splitlines():
        if line.startswith("\t") and current is not None:
            out[current] += 1
            continue
        m = RULE.match(line)
        current = m.group(1) if m and not line.startswith("#") and "=" not in line.split(":", 1)[0] else None
        if current is not None:
            out.setdefault(current, 0)
    return out


def test_the_counter_counts_recipe_lines():
    text = "a: b\n\t@one \\\n\t  two\n\t@three\n\n# c: no\nV := x\nd:\n\t@x\nifeq ($(P),cpu)\ne: ; @inline\nendif\n"
    assert recipes(text) == {"a": 3, "d": 1, "e": 0}


def test_no_compose_mk_target_is_longer_than_five_lines():
    found = recipes((REPO / "services" / "compose.mk").read_text())
    assert {"run", "sweep", "down", "lock", "logs", "status"} <= set(found), sorted(found)
    long = {target: n for target, n in found.items() if n > MAX_LINES}
    assert not long, (
        f"targets of services/compose.mk over {MAX_LINES} lines (move the logic into host/lifecycle.py): {long}"
    )
