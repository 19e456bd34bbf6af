"""The report's goodput table (--slo): per bench cell, the requests meeting every per-request target and
their rate, beside bench's own figure (measure/goodput.py defines both)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from specstack.report.format import num, pct
from specstack.report.render import Block
from specstack.report.verdicts import label as _label
from specstack.results.reader import load_text

if TYPE_CHECKING:
    from specstack.report.contents import Report


def _slo_text(slo: str) -> str:
    return ", ".join(f"{k} ≤ {v:g} ms" for k, v in json.loads(slo).items())


def goodput_table(rep: Report, task: str) -> list[Block]:
    """--slo: per bench cell, the requests meeting every target and their rate, beside bench's own figure."""
    cells = [c for c in rep.cells if c["task"] == task and c.get("slo")]
    if not cells:
        return []
    labels = {r["method"]: _label(r) for r in rep.speed}
    return [
        ("h3", f"Goodput under the SLO ({_slo_text(cells[0]['slo'])}, per request)"),
        (
            "table",
            [
                "method",
                "load",
                "repeat",
                "good / completed",
                "share meeting the SLO",
                "goodput req/s",
                "bench's request_goodput",
            ],
            [
                [
                    labels.get(c["method"], c["method"]),
                    load_text(c),
                    c["repeat"],
                    f"{num(c['good_requests'], 0)} / {num(c['completed'], 0)}",
                    pct(c["goodput_share"]),
                    num(c["request_goodput"], 3),
                    num(c["bench_request_goodput"], 3),
                ]
                for c in cells
            ],
        ),
        (
            "p",
            "A request is good when its TTFT, TPOT ((E2EL − TTFT) ÷ (tokens − 1)) and E2EL each meet their "
            "target, as `vllm bench serve --goodput` defines it; goodput = good requests ÷ the cell's "
            "duration. Computed from bench's per-request results and checked equal to bench's own figure "
            "in every cell (the window checks).",
        ),
    ]
