"""The PromQL that both Prometheus views share: the dashboards (grafana/ imports it) and the bundle's
per-position plots (measure/prometheus_view.py) evaluate the same expression, so they cannot drift apart.

    sum by (position) (increase(vllm:spec_decode_num_accepted_tokens_per_pos_total{<labels>}[<window>]))
      / on () group_left ()
    (sum (increase(vllm:spec_decode_num_drafts_total{<labels>}[<window>])) > 0)

Both sums run over vLLM's `engine` label. Value at position p (0-based) = share of drafts (verification steps)
that accepted at least p+1 draft tokens.
"""

from __future__ import annotations

from typing import Any

from specstack.config import metric_names as m

PER_POS_TOTAL = m.SPEC_ACCEPTED_PER_POS + "_total"
DRAFTS_TOTAL = m.SPEC_NUM_DRAFTS + "_total"


def _label_value(value: str) -> str:
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def selector(labels: dict[str, Any]) -> str:
    """Exact-match label selector body, e.g. `method="eagle3", run_id="r1"`."""
    return ", ".join(f'{k}="{_label_value(v)}"' for k, v in sorted(labels.items()))


def acceptance_by_position_expr(selector: str, window: str, by: str = "", fn: str = "increase") -> str:
    """Per-position accepted / drafts over `window`, grouped `by` (e.g. "method, run_id") and position.

    `fn` is "increase" (a window's value, e.g. `$__range`) or "rate" (a time series, e.g. `$__rate_interval`).
    """
    by_pos = f"{by}, {m.POSITION_LABEL}" if by else m.POSITION_LABEL
    num = f"sum by ({by_pos}) ({fn}({PER_POS_TOTAL}{{{selector}}}[{window}]))"
    den = f"sum{f' by ({by})' if by else ''} ({fn}({DRAFTS_TOTAL}{{{selector}}}[{window}]))"
    return f"{num} / on ({by}) group_left () ({den} > 0)"
