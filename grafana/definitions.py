"""The specstack dashboards: what each panel shows and why. Grafana types come only from `panels`.

Every panel description ends with the metrics it queries ("Metrics: `...`"); `generate.py --check` enforces it.
"""

from __future__ import annotations

from collections.abc import Callable

import panels as P
from promql import INTERVAL, RANGE, RATE, Q

from specstack.config import metric_names as m
from specstack.config.promql import acceptance_by_position_expr

JSON = dict

TAG = "specstack"
SCRAPE_INTERVAL = "5s"  # Prometheus scrape interval of vLLM and the window exporter (prometheus/prometheus.yml)

# Exposed names (counters carry _total; histograms are queried through _bucket/_sum/_count).
DRAFTS = m.SPEC_NUM_DRAFTS + "_total"
DRAFT_TOKENS = m.SPEC_NUM_DRAFT_TOKENS + "_total"
ACCEPTED = m.SPEC_NUM_ACCEPTED_TOKENS + "_total"
PER_POS = m.SPEC_ACCEPTED_PER_POS + "_total"
GENERATION = m.GENERATION_TOKENS + "_total"
PREEMPTIONS = m.NUM_PREEMPTIONS + "_total"
TPOT = m.TIME_PER_OUTPUT_TOKEN
ITL = m.INTER_TOKEN_LATENCY

TOKENS_PER_S = "tps"
QUANTILES = (0.5, 0.95, 0.99)
QUANTILE_COLORS = {"p50": "light-blue", "p95": "blue", "p99": "dark-blue", "mean": "purple"}
FLOW_COLORS = {"proposed": "blue", "accepted": "green", "rejected": "orange"}
# Cosmetic: fixed colours for the methods of services/methods.toml; other methods get palette colours.
METHOD_COLORS = {
    "baseline": "text",
    "mtp-baseline": "#8f8f8f",
    "ngram": "yellow",
    "draft_model": "purple",
    "eagle3": "green",
    "suffix": "orange",
    "mtp": "blue",
}

SPEC_SELECTOR = 'method=~"$method", run_id=~"$run_id"'


def metrics(*names: str) -> str:
    return "Metrics: " + ", ".join(f"`{n}`" for n in names)


def _variables(*, multi: bool) -> list:
    """method and run_id, from the target labels Prometheus attaches to every vLLM series."""
    return [
        P.query_variable("method", "method", f"label_values({GENERATION}, method)", multi=multi, include_all=multi),
        P.query_variable(
            "run_id",
            "run",
            f'label_values({GENERATION}{{method=~"$method"}}, run_id)',
            multi=multi,
            include_all=multi,
            newest_first=True,
        ),
    ]


def window_annotations() -> list[JSON]:
    """Run windows written by the collector's WindowExporter: warm-up, acceptance phases, bench runs."""
    sel = SPEC_SELECTOR

    def window(name: str, selector: str, *, color: str, title: str) -> JSON:
        # The max over each step's own interval: a window open for a single scrape shows at every step, even where
        # scrapes come a few ms apart from the step (a plain `active > 0` at a step lands on the sample before or
        # after it, both 0, and drew no region: test_dashboards_live saw it on real data).
        return P.annotation(
            name,
            f"max_over_time({m.WINDOW_ACTIVE}{{{sel}, {selector}}}[{INTERVAL}]) > 0",
            color=color,
            title=title,
            step=SCRAPE_INTERVAL,
            tag_keys=("method", "phase", "task", "concurrency"),
            text="{{method}} · run {{run_id}} · {{phase}} {{task}} {{concurrency}}",
        )

    return [
        window(
            "Warm-up windows",
            'phase=~"warm.*"',
            color="#8f8f8f",
            title="{{method}} warm-up",
        ),
        window(
            "Acceptance windows",
            f'phase="{m.PHASE_ACCEPTANCE}"',
            color="green",
            title="{{method}} acceptance {{task}}",
        ),
        window(
            "Bench windows",
            f'phase!~"warm.*|{m.PHASE_ACCEPTANCE}"',
            color="blue",
            title="{{method}} {{phase}} {{task}} c={{concurrency}}",
        ),
    ]


def _windows_table():
    by = "run_id, method, phase, task, concurrency"
    latest = lambda metric: f"max by ({by}) (max_over_time({metric}{{{SPEC_SELECTOR}}}[{RANGE}]))"  # noqa: E731
    return P.table(
        "Run windows (exact times)",
        "Every measured window the collector marked in the selected range: warm-up, acceptance phase per "
        "task, each bench task x concurrency. Start and end are the exact times the collector opened and "
        "closed the window (the annotation regions are drawn at scrape resolution, "
        f"{SCRAPE_INTERVAL}). Set the time range to a window to read the panels for that window alone.\n\n"
        + metrics(m.WINDOW_START, m.WINDOW_END),
        [
            P.target(f"{latest(m.WINDOW_START)} * 1000", instant=True, table=True),
            P.target(f"{latest(m.WINDOW_END)} * 1000", instant=True, table=True),
            P.target(f"{latest(m.WINDOW_END)} - {latest(m.WINDOW_START)}", instant=True, table=True),
        ],
        label_columns={
            "run_id": "run",
            "method": "method",
            "phase": "phase",
            "task": "task",
            "concurrency": "concurrency",
        },
        value_columns={"A": ("start", "dateTimeAsIso"), "B": ("end", "dateTimeAsIso"), "C": ("duration", "s")},
    )


# --- panels shared by both dashboards -------------------------------------------------------------------


class Panels:
    """The key panels for one grouping: "method, run_id" (one run in detail) or "method" (methods overlaid)."""

    def __init__(self, by: str, legend: str):
        self.q = Q(SPEC_SELECTOR, by)
        self.by = by
        self.legend = legend  # e.g. "{{method}}"
        self.method_colors = METHOD_COLORS if by == "method" else {}

    def _l(self, suffix: str = "") -> str:
        return f"{self.legend} {suffix}".strip()

    def acceptance_rate(self):
        return P.timeseries(
            "Draft acceptance rate",
            "Accepted draft tokens / proposed draft tokens, per second of the rate window, summed over engines. "
            "Comparable only between methods that always propose K drafts (variable-length drafters such as "
            "suffix propose fewer and score higher); use the mean acceptance length to compare methods.\n\n"
            + metrics(ACCEPTED, DRAFT_TOKENS),
            [P.target(self.q.ratio(ACCEPTED, DRAFT_TOKENS), self._l())],
            unit="percentunit",
            max_value=1,
            no_value=P.NO_DRAFTS,
            colors=self.method_colors,
        )

    def acceptance_length(self):
        return P.timeseries(
            "Mean acceptance length",
            "Tokens produced per verification step: 1 + accepted draft tokens / drafts (the +1 is the bonus "
            "token the target model emits every step). Upper bound: num_speculative_tokens + 1. Summed over "
            "engines.\n\n" + metrics(ACCEPTED, DRAFTS),
            [P.target(f"1 + {self.q.ratio(ACCEPTED, DRAFTS)}", self._l())],
            decimals=2,
            min_value=1,
            no_value=P.NO_DRAFTS,
            colors=self.method_colors,
        )

    def position_over_time(self):
        return P.timeseries(
            "Acceptance by draft position over time",
            "Per position p (0 = first draft token): drafts that accepted at least p+1 tokens / drafts. It falls "
            "with position because a draft token only counts if every earlier one was accepted. For drafters "
            "that propose fewer than K tokens on some steps (V1 n-gram, suffix) the later positions mix in "
            "steps that had no draft there.\n\n" + metrics(PER_POS, DRAFTS),
            [
                P.target(
                    acceptance_by_position_expr(SPEC_SELECTOR, RATE, self.by, fn="rate"), self._l("pos {{position}}")
                )
            ],
            unit="percentunit",
            max_value=1,
            no_value=P.NO_DRAFTS,
        )

    def token_flow(self):
        proposed, accepted = self.q.sum_rate(DRAFT_TOKENS), self.q.sum_rate(ACCEPTED)
        return P.timeseries(
            "Draft tokens / s: proposed, accepted, rejected",
            "Draft tokens proposed, accepted and rejected (proposed - accepted) per second, summed over engines. "
            "Rejected tokens are draft and verification compute spent for nothing.\n\n"
            + metrics(DRAFT_TOKENS, ACCEPTED),
            [
                P.target(proposed, self._l("proposed")),
                P.target(accepted, self._l("accepted")),
                P.target(f"{proposed} - {accepted}", self._l("rejected")),
            ],
            unit=TOKENS_PER_S,
            no_value=P.NO_DRAFTS,
            colors=FLOW_COLORS if self.by != "method" else {},
        )

    def drafts_rate(self):
        return P.timeseries(
            "Drafts (verification steps with drafts) / s",
            "Number of (request, step) pairs that carried at least one draft token, per second, summed over "
            "engines. The denominator of the acceptance length and the per-position acceptance.\n\n" + metrics(DRAFTS),
            [P.target(self.q.sum_rate(DRAFTS), self._l())],
            no_value=P.NO_DRAFTS,
            colors=self.method_colors,
        )

    def draft_share(self):
        return P.timeseries(
            "Share of output tokens from drafts",
            "Accepted draft tokens / all generated tokens (generated tokens include the accepted drafts and "
            "the bonus token of each step). 0 would mean speculation never paid off.\n\n"
            + metrics(ACCEPTED, GENERATION),
            [P.target(self.q.ratio(ACCEPTED, GENERATION), self._l())],
            unit="percentunit",
            max_value=1,
            no_value=P.NO_DRAFTS,
            colors=self.method_colors,
        )

    def output_tokens(self):
        return P.timeseries(
            "Output tokens / s",
            "Generated tokens per second over all requests, summed over engines (server side; includes "
            "warm-up and acceptance-phase traffic, so read it inside a bench window).\n\n" + metrics(GENERATION),
            [P.target(self.q.sum_rate(GENERATION), self._l())],
            unit=TOKENS_PER_S,
            colors=self.method_colors,
        )

    def _latency(self, title: str, intro: str, histogram: str, quantiles=QUANTILES):
        targets = [P.target(self.q.quantile(q, histogram), self._l(f"p{round(q * 100)}")) for q in quantiles]
        targets.append(P.target(self.q.mean(histogram), self._l("mean")))
        return P.timeseries(
            title,
            intro + "\n\n" + metrics(histogram),
            targets,
            unit="s",
            colors=QUANTILE_COLORS if self.by != "method" else {},
        )

    def tpot(self):
        return self._latency(
            "TPOT (time per output token), server histogram",
            "Per request: decode time / (output tokens - 1), observed when the request finishes; percentiles "
            "from the server histogram over the rate window (bucket resolution), only where requests "
            "finished. This is per token, so it shows the speed-up of speculative decoding directly.",
            TPOT,
        )

    def itl(self):
        return self._latency(
            "ITL per engine step, server histogram",
            "vLLM's inter-token latency histogram is per ENGINE STEP, not per token: one sample per request "
            "per step, and with speculative decoding one step emits 1..K+1 tokens. So spec methods show a "
            "higher ITL than the baseline even when they are faster per token; compare TPOT, or divide by "
            "the mean acceptance length. (vllm bench serve's ITL is per streamed chunk, yet another thing.)",
            ITL,
        )

    def kv_usage(self):
        return P.timeseries(
            "KV-cache usage",
            "Fraction of the GPU KV cache in use, the most loaded engine (max over engines; a sum of "
            "fractions would mean nothing). Draft models and EAGLE heads take KV from the same pool.\n\n"
            + metrics(m.KV_CACHE_USAGE),
            [P.target(self.q.agg("max", m.KV_CACHE_USAGE), self._l())],
            unit="percentunit",
            max_value=1,
            colors=self.method_colors,
        )

    def preemptions(self):
        return P.timeseries(
            "Preemptions / s",
            "Running requests evicted to free KV cache, per second, summed over engines. Non-zero values "
            "inside a bench window make its latencies incomparable.\n\n" + metrics(PREEMPTIONS),
            [P.target(self.q.sum_rate(PREEMPTIONS), self._l())],
            colors=self.method_colors,
        )

    def requests(self):
        return P.timeseries(
            "Running and waiting requests",
            "Requests in the running batch and in the waiting queue, summed over engines.\n\n"
            + metrics(m.NUM_REQUESTS_RUNNING, m.NUM_REQUESTS_WAITING),
            [
                P.target(self.q.agg("sum", m.NUM_REQUESTS_RUNNING), self._l("running")),
                P.target(self.q.agg("sum", m.NUM_REQUESTS_WAITING), self._l("waiting")),
            ],
        )


# --- dashboards -----------------------------------------------------------------------------------------


def spec_decode() -> JSON:
    """One method, one run, in detail."""
    by = "method, run_id"
    q = Q(SPEC_SELECTOR, by)
    p = Panels(by, "")
    layout = P.Layout()

    range_note = "over the selected time range (set it to a run window: see the annotations)"
    for panel in [
        P.stat(
            "Draft acceptance rate (range)",
            f"Accepted / proposed draft tokens, {range_note}.\n\n" + metrics(ACCEPTED, DRAFT_TOKENS),
            P.target(q.ratio(ACCEPTED, DRAFT_TOKENS, over_range=True), instant=True),
            unit="percentunit",
            decimals=1,
            no_value=P.NO_DRAFTS,
        ),
        P.stat(
            "Mean acceptance length (range)",
            f"1 + accepted draft tokens / drafts, {range_note}.\n\n" + metrics(ACCEPTED, DRAFTS),
            P.target(f"1 + {q.ratio(ACCEPTED, DRAFTS, over_range=True)}", instant=True),
            unit="none",
            decimals=2,
            no_value=P.NO_DRAFTS,
        ),
        P.stat(
            "Output from drafts (range)",
            f"Accepted draft tokens / generated tokens, {range_note}.\n\n" + metrics(ACCEPTED, GENERATION),
            P.target(q.ratio(ACCEPTED, GENERATION, over_range=True), instant=True),
            unit="percentunit",
            decimals=1,
            no_value=P.NO_DRAFTS,
        ),
        P.stat(
            "Drafts (range)",
            f"Verification steps that carried drafts, {range_note}; 0 or absent means no "
            "speculation happened (baselines have no spec counters at all).\n\n" + metrics(DRAFTS),
            P.target(q.sum_increase(DRAFTS), instant=True),
            unit="short",
            decimals=0,
            no_value=P.NO_DRAFTS,
            zero_text=P.NO_DRAFTS,
        ),
        P.stat(
            "Mean TPOT (range)",
            f"Mean time per output token over the requests that finished {range_note} "
            "(histogram sum / count).\n\n" + metrics(TPOT),
            P.target(q.mean(TPOT, over_range=True), instant=True),
            unit="s",
            decimals=4,
        ),
        P.stat(
            "Preemptions (range)",
            f"Requests preempted {range_note}.\n\n" + metrics(PREEMPTIONS),
            P.target(q.sum_increase(PREEMPTIONS), instant=True),
            unit="short",
            decimals=0,
        ),
    ]:
        layout.add(panel, 4, 4)

    layout.row("Acceptance")
    layout.add(p.acceptance_rate(), 12, 8)
    layout.add(p.acceptance_length(), 12, 8)
    layout.add(
        P.barchart(
            "Acceptance by draft position (range)",
            "Per position p (0 = first draft token): drafts that accepted at least p+1 draft tokens / drafts, "
            f"{range_note}, summed over engines. The same query, evaluated over one window, gives the PNG in the "
            "results bundle.\n\n" + metrics(PER_POS, DRAFTS),
            [P.target(acceptance_by_position_expr(SPEC_SELECTOR, RANGE, by), instant=True, table=True)],
            unit="percentunit",
            x_field=m.POSITION_LABEL,
            hide_fields=("Time", "method", "run_id"),
            sort_by=m.POSITION_LABEL,
            max_value=1,
            decimals=3,
            no_value=P.NO_DRAFTS,
        ),
        12,
        9,
    )
    layout.add(p.position_over_time(), 12, 9)

    layout.row("Token flow")
    layout.add(p.token_flow(), 12, 8)
    layout.add(p.draft_share(), 12, 8)
    layout.add(p.output_tokens(), 12, 8)
    layout.add(p.drafts_rate(), 12, 8)

    layout.row("Latency (server histograms)")
    layout.add(p.tpot(), 12, 8)
    layout.add(p.itl(), 12, 8)

    layout.row("Scheduler and KV cache")
    layout.add(p.kv_usage(), 8, 8)
    layout.add(p.preemptions(), 8, 8)
    layout.add(p.requests(), 8, 8)

    layout.row("Run windows")
    layout.add(_windows_table(), 24, 8)

    return P.dashboard(
        uid="specstack-spec-decode",
        title="specstack / Speculative decoding",
        description="One method and run of the specstack A/B stack: acceptance (rate, length, by draft "
        "position), token flow, TPOT/ITL and scheduler state, with the collector's run windows.",
        tags=[TAG],
        layout=layout,
        variables=_variables(multi=False),
        annotations=window_annotations(),
        links=P.dashboard_links(TAG),
    )


def comparison() -> JSON:
    """Methods overlaid on one time axis, plus per-method summaries over the selected range."""
    by = "method"
    q = Q(SPEC_SELECTOR, by)
    p = Panels(by, "{{method}}")
    layout = P.Layout()
    range_note = "over the selected time range, per method (several runs of a method are pooled)"

    layout.row("Per method over the selected range (method vs baseline)")

    def per_method(title: str, intro: str, expr: str, unit: str, names: tuple[str, ...], **kw):
        return P.barchart(
            title,
            f"{intro}, {range_note}.\n\n" + metrics(*names),
            [P.target(expr, instant=True, table=True)],
            unit=unit,
            x_field="method",
            sort_by="method",
            **kw,
        )

    layout.add(
        per_method(
            "Mean acceptance length by method (range)",
            "1 + accepted draft tokens / drafts",
            f"1 + {q.ratio(ACCEPTED, DRAFTS, over_range=True)}",
            "none",
            (ACCEPTED, DRAFTS),
            decimals=2,
            no_value=P.NO_DRAFTS,
        ),
        6,
        8,
    )
    layout.add(
        per_method(
            "Draft acceptance rate by method (range)",
            "Accepted / proposed draft tokens",
            q.ratio(ACCEPTED, DRAFT_TOKENS, over_range=True),
            "percentunit",
            (ACCEPTED, DRAFT_TOKENS),
            max_value=1,
            decimals=3,
            no_value=P.NO_DRAFTS,
        ),
        6,
        8,
    )
    layout.add(
        per_method(
            "Mean TPOT by method (range)",
            "Mean time per output token of the finished requests (the baseline bar is the reference; lower is faster)",
            q.mean(TPOT, over_range=True),
            "s",
            (TPOT,),
            decimals=4,
        ),
        6,
        8,
    )
    layout.add(
        per_method(
            "Mean ITL per engine step by method (range)",
            "Mean of vLLM's inter-token latency histogram, which is "
            "per engine step, not per token (a spec step emits 1..K+1 tokens)",
            q.mean(ITL, over_range=True),
            "s",
            (ITL,),
            decimals=4,
        ),
        6,
        8,
    )
    layout.add(
        P.barchart(
            "Acceptance by draft position by method (range)",
            "Per position p (0 = first draft token): drafts that accepted at least p+1 draft tokens / drafts, "
            f"{range_note}; one bar per method in each position group.\n\n" + metrics(PER_POS, DRAFTS),
            [P.target(acceptance_by_position_expr(SPEC_SELECTOR, RANGE, by), instant=True, table=True)],
            unit="percentunit",
            x_field=f"{m.POSITION_LABEL}\\method",
            matrix=(m.POSITION_LABEL, "method"),
            max_value=1,
            decimals=3,
            colors=METHOD_COLORS,
            no_value=P.NO_DRAFTS,
        ),
        24,
        9,
    )

    layout.row("Acceptance over time (methods overlaid)")
    layout.add(p.acceptance_rate(), 8, 8)
    layout.add(p.acceptance_length(), 8, 8)
    layout.add(p.position_over_time(), 8, 8)

    layout.row("Token flow over time")
    layout.add(p.output_tokens(), 8, 8)
    layout.add(p.draft_share(), 8, 8)
    layout.add(p.token_flow(), 8, 8)

    layout.row("Latency over time (server histograms)")
    layout.add(
        p._latency(
            "TPOT p50 / p99 by method",
            "Per request: decode time / (output tokens - 1), observed when the request finishes; percentiles "
            "from the server histogram over the rate window, only where requests finished.",
            TPOT,
            quantiles=(0.5, 0.99),
        ),
        12,
        8,
    )
    layout.add(
        p._latency(
            "ITL per engine step p50 / p99 by method",
            "vLLM's inter-token latency histogram is per ENGINE STEP, not per token: with speculative decoding "
            "one step emits 1..K+1 tokens, so spec methods show a higher step latency even when they are "
            "faster per token. Compare TPOT across methods.",
            ITL,
            quantiles=(0.5, 0.99),
        ),
        12,
        8,
    )

    layout.row("Scheduler and KV cache over time")
    layout.add(p.kv_usage(), 8, 8)
    layout.add(p.preemptions(), 8, 8)
    layout.add(p.requests(), 8, 8)

    layout.row("Run windows")
    layout.add(_windows_table(), 24, 8)

    return P.dashboard(
        uid="specstack-comparison",
        title="specstack / Method comparison",
        description="Speculative methods against their baselines on the same target, GPU and requests: "
        "per-method summaries over the selected range and the key panels with methods overlaid "
        "on one time axis, annotated with the collector's run windows.",
        tags=[TAG],
        layout=layout,
        variables=_variables(multi=True),
        annotations=window_annotations(),
        links=P.dashboard_links(TAG),
    )


DASHBOARDS: dict[str, Callable[[], JSON]] = {
    "specstack-spec-decode.json": spec_decode,
    "specstack-comparison.json": comparison,
}
