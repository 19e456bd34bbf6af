"""How a summary.json that disagrees with its own sums and request records is shown (figures/recompute.py): each
figure is shown as recomputed and marked FLAG; one it cannot recompute reads MISSING, never "n/a" (which means no
drafts); and a list names each finding: method, task, phase, figure, the value in summary.json, the recomputed one.
The report, the console table and compare all write them with these."""

from __future__ import annotations

import json
from typing import Any

from specstack.figures.recompute import ABSENT, KIND, UNKNOWN, Finding
from specstack.report.format import num, pct
from specstack.report.render import Block
from specstack.results.layout import SUMMARY_FILE

FLAG = "⚑"
MISSING = "missing"
HEADING = "summary.json disagrees with its sums, request records or bench files"
SOURCES = {"records": "its request records", "sums": "its own sums", "bench file": "its bench file"}
NOTE = (
    f"{FLAG} = the figure summary.json states differs from, or lacks, what its sums, request records or bench "
    "files give: "
    f'the figure shown is the recomputed one; "{MISSING}" = it is gone and cannot be recomputed '
    "(n/a means no drafts, never missing). `specstack verify RUN` names the edited file."
)


def value_text(figure: str, value: Any) -> str:
    """A figure as summary.json holds it, in the report's units."""
    if value is ABSENT:
        return "(no such key)"
    if value is UNKNOWN:
        return f"{MISSING} (cannot be recomputed)"
    if value is None:
        return "null" if figure in KIND else "n/a"
    kind = KIND.get(figure)
    if kind == "share":
        return pct(value)
    if kind == "shares":
        return "[" + ", ".join("—" if x is None else pct(x) for x in value) + "]"
    if kind == "number" or (kind is None and isinstance(value, float)):  # bench's latencies: `*_ms`
        return num(value, 4)
    return json.dumps(value, sort_keys=True) if isinstance(value, (list, dict)) else str(value)


def _recomputed(f: Finding) -> str:
    if f.recomputed is None:
        return "n/a (no drafts)"
    return value_text(f.figure, f.recomputed)


def line(f: Finding, side: str = "") -> str:
    """ "ngram · code · greedy: acceptance_rate: summary.json says 95.6 %, its records give 55.6 % (shown)"."""
    where = f"{side}{f.method} · {f.task} · {f.phase}: {f.figure}"
    source = SOURCES.get(f.source, f.source)
    if f.unknown:
        return (
            f"{where}: {MISSING} from summary.json and cannot be recomputed (no records, no sums): shown as {MISSING}"
        )
    said = "lacks it" if f.stated is ABSENT else f"says {value_text(f.figure, f.stated)}"
    return f"{where}: summary.json {said}, {source} give {_recomputed(f)} (shown)"


def _raw(value: Any) -> Any:
    return None if value is ABSENT or value is UNKNOWN else value


# Open-ended rows, so dict[str, Any] (no TypedDict in report/rows.py): COLUMNS["summary_findings"] for the report's
# table, and compare's rows add "side" and, raw, the two JSON values.
def rows(findings: list[Finding], side: str | None = None, raw: bool = False) -> list[dict[str, Any]]:
    """One row per finding, for a table: every value as text, in the report's units; `raw` (compare.json) adds
    both values as the JSON holds them (`summary_json_value`, `recomputed_value`; null where absent or unknown)."""
    return [
        {
            **({"side": side} if side is not None else {}),
            "method": f.method,
            "task": f.task,
            "phase": f.phase,
            "figure": f.figure,
            "summary_json": value_text(f.figure, f.stated),
            "recomputed": _recomputed(f),
            "from": f.source,
            "check": f.check,
            **({"summary_json_value": _raw(f.stated), "recomputed_value": _raw(f.recomputed)} if raw else {}),
        }
        for f in findings
    ]


def cell(text: str, finding: Finding | None) -> str:
    """A table cell: as it is, or the recomputed figure marked, or MISSING marked."""
    if finding is None:
        return text
    return f"{MISSING} {FLAG}" if finding.unknown else f"{text} {FLAG}"


def table(found: list[dict[str, Any]]) -> list[Block]:
    """Finding rows (`rows`, a "side" column where they have one) as render blocks (report.md, compare.md): a bold
    line, the table and what the mark means."""
    if not found:
        return []
    keys = (["side"] if "side" in found[0] else []) + [
        "method",
        "task",
        "phase",
        "figure",
        "summary_json",
        "recomputed",
        "from",
    ]
    head = [{"summary_json": SUMMARY_FILE}.get(k, k) for k in keys]
    return [
        ("p", f"**{FLAG} {HEADING}** ({len(found)} figure(s)); every table shows the recomputed figure:"),
        ("table", head, [[r[k] for k in keys] for r in found]),
        ("p", NOTE),
    ]
