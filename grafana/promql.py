"""PromQL builders for the specstack dashboards (plain strings, no Grafana types).

Every ratio drops the series whose denominator is 0 (`/ (den > 0)`), so idle periods, baselines and runs
without drafts give "no data" (shown as "No drafts") instead of NaN or Inf spikes. Every histogram quantile
is kept only where the histogram had observations in the window (histogram_quantile of all-zero buckets is
NaN). Aggregations always keep `by` (method and run) and so sum over vLLM's `engine` (and `model_name`) labels.
"""

from __future__ import annotations

RATE = "$__rate_interval"  # needs the datasource's timeInterval = scrape interval
RANGE = "$__range"  # the dashboard's selected time range, for instant "over the range" queries
INTERVAL = "$__interval"  # the query's step, for what each step sees of the samples since the one before


def _by(labels: str) -> str:
    return f" by ({labels})" if labels else ""


def _join(*labels: str) -> str:
    return ", ".join(label for label in labels if label)


def guarded_div(numerator: str, denominator: str, matching: str = "") -> str:
    """numerator / denominator, without the series whose denominator is 0."""
    op = f" {matching} " if matching else " "
    return f"{numerator} /{op}({denominator} > 0)"


class Q:
    """PromQL snippets for one label selector, aggregated `by` the given labels."""

    def __init__(self, selector: str, by: str):
        self.selector = selector
        self.by = by

    def sel(self, metric: str, *matchers: str) -> str:
        return f"{metric}{{{_join(self.selector, *matchers)}}}"

    def sum_fn(self, fn: str, metric: str, window: str = RATE, *, by: str | None = None) -> str:
        by = self.by if by is None else by
        return f"sum{_by(by)} ({fn}({self.sel(metric)}[{window}]))"

    def sum_rate(self, metric: str, *, by: str | None = None) -> str:
        return self.sum_fn("rate", metric, RATE, by=by)

    def sum_increase(self, metric: str, *, by: str | None = None) -> str:
        return self.sum_fn("increase", metric, RANGE, by=by)

    def ratio(self, numerator: str, denominator: str, *, over_range: bool = False) -> str:
        """Ratio of two counters' rates (or of their increases over the selected range)."""
        fn, window = ("increase", RANGE) if over_range else ("rate", RATE)
        return guarded_div(self.sum_fn(fn, numerator, window), self.sum_fn(fn, denominator, window))

    def agg(self, op: str, metric: str) -> str:
        return f"{op}{_by(self.by)} ({self.sel(metric)})"

    def quantile(self, q: float, histogram: str) -> str:
        """q-quantile of a histogram over the rate window, only where it had observations."""
        buckets = self.sum_fn("rate", f"{histogram}_bucket", RATE, by=_join(self.by, "le"))
        count = self.sum_fn("rate", f"{histogram}_count", RATE)
        on = f"on ({self.by}) " if self.by else "on () "
        return f"histogram_quantile({q}, {buckets}) and {on}({count} > 0)"

    def mean(self, histogram: str, *, over_range: bool = False) -> str:
        return self.ratio(f"{histogram}_sum", f"{histogram}_count", over_range=over_range)
