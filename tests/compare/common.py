"""What the comparison tests share: a comparison with a stand-in tokenizer, and one row by its keys."""

from __future__ import annotations

from specstack.compare import build, gate
from tests.report.test_report import FixedTokenizers


def compare(a, b, spec: str | None = None, tok=None):
    return build.compare(a, b, thresholds=gate.parse(spec), tokenizers=FixedTokenizers(tok), with_plots=False)


def one(rows, **match):
    """The one row (dict or Pair) whose fields match."""
    found = [
        r for r in rows if all((r.get(k) if isinstance(r, dict) else getattr(r, k)) == v for k, v in match.items())
    ]
    assert len(found) == 1, (match, found)
    return found[0]
