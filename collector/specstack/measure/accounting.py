"""Accounting: acceptance from per-request metrics and from counter deltas, and the cross-check.

Ratios are taken after summing numerators and denominators over requests; a zero denominator is
None ("no drafts"), never 0 %. Notation: C = accepted draft tokens, D = draft tokens, R = spec steps.

Per draft position there are two rates. vLLM's (its counters and bench): steps that accepted at least p+1
drafts / all drafting steps, so a variable-length drafter (ngram, suffix) that rarely proposes p+1 tokens shows
a low rate at p although every draft it did make there may have been accepted. The conditional rate: the same
numerator / steps that drafted at least p+1 tokens; it needs the per-step arrays of
`--per-request-spec-decode-metrics detailed` and is None without them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from specstack.config import metric_names as m
from specstack.measure.snapshots import Delta


def ratio(num: float, den: float) -> float | None:
    return num / den if den else None


@dataclass
class Acceptance:
    steps: int = 0  # R: verify steps with >= 1 draft (Σ num_spec_steps / Δ num_drafts)
    draft_tokens: int = 0  # D
    accepted: int = 0  # C (bonus token excluded)
    per_position: list[int] = field(default_factory=list)  # steps that accepted >= p+1 drafts
    histogram: list[int] | None = None  # steps that accepted exactly j (requests only)
    requests: int = 0  # requests that carried spec metrics (requests only)
    # From the per-step arrays (`detailed` level); requests only, None unless every request carried them.
    detailed_requests: int = 0
    drafted_per_position: list[int] | None = None  # steps that drafted >= p+1 tokens
    step_accepted_per_position: list[int] | None = None  # steps that accepted >= p+1, counted from the arrays
    step_count: int | None = None  # Σ len(per_step_drafted)
    step_draft_tokens: int | None = None  # Σ per_step_drafted

    @property
    def acceptance_rate(self) -> float | None:
        return ratio(self.accepted, self.draft_tokens)

    @property
    def mean_acceptance_length(self) -> float | None:
        return None if not self.steps else 1 + self.accepted / self.steps

    @property
    def per_position_rates(self) -> list[float] | None:
        return None if not self.steps else [p / self.steps for p in self.per_position]

    @property
    def per_position_conditional_rates(self) -> list[float | None] | None:
        """Accepted at p / drafted at p: steps accepting >= p+1 drafts / steps drafting >= p+1 (None where no
        step drafted that far)."""
        if not self.steps or self.drafted_per_position is None:
            return None
        k = max(len(self.per_position), len(self.drafted_per_position))
        acc = self.per_position + [0] * (k - len(self.per_position))
        return [
            ratio(acc[p], d)
            for p, d in enumerate(self.drafted_per_position + [0] * (k - len(self.drafted_per_position)))
        ]

    @property
    def no_accept_share(self) -> float | None:
        """Share of spec steps that accepted no draft (histogram[0] / R)."""
        return None if not self.steps or not self.histogram else self.histogram[0] / self.steps

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.update(
            acceptance_rate=self.acceptance_rate,
            mean_acceptance_length=self.mean_acceptance_length,
            per_position_rates=self.per_position_rates,
            no_accept_share=self.no_accept_share,
            per_position_conditional_rates=self.per_position_conditional_rates,
        )
        return d


def positions_from_histogram(hist: list[int]) -> list[int]:
    """Steps that accepted at least p+1 drafts, for p = 0..K-1: Σ_{j>p} hist[j]."""
    return [sum(hist[p + 1 :]) for p in range(len(hist) - 1)]


def _add(a: list[int], b: list[int]) -> list[int]:
    n = max(len(a), len(b))
    return [(a[i] if i < len(a) else 0) + (b[i] if i < len(b) else 0) for i in range(n)]


def add_request(total: Acceptance | None, s: dict[str, Any] | None) -> Acceptance | None:
    """Fold one request's `metrics.speculative_decoding` into a running sum (None until one carries metrics),
    so a window of any size keeps a few integers instead of every response."""
    if s is None:
        return total
    total = total or Acceptance(histogram=[])
    assert total.histogram is not None  # a running sum keeps one from its first request
    total.requests += 1
    total.steps += int(s["num_spec_steps"])
    total.draft_tokens += int(s["num_draft_tokens"])
    total.accepted += int(s["num_accepted_draft_tokens"])
    total.histogram = _add(total.histogram, [int(x) for x in s["acceptance_histogram"]])
    total.per_position = positions_from_histogram(total.histogram)
    _add_steps(total, s)
    return total


def _at_least(values: list[int]) -> list[int]:
    """[3, 1, 2] -> steps with value >= 1, >= 2, >= 3: [3, 2, 1]."""
    top = max(values, default=0)
    return [sum(1 for v in values if v > p) for p in range(top)]


def _add_steps(total: Acceptance, s: dict[str, Any]) -> None:
    """Fold the per-step arrays (`detailed` level) in; one request without them makes them unusable."""
    drafted, accepted = s.get("per_step_drafted"), s.get("per_step_accepted")
    if drafted is None and accepted is None and not int(s["num_spec_steps"]):
        drafted = accepted = []  # vLLM 0.32.0 leaves the arrays out when they are empty (stats.py to_dict)
    if drafted is None or accepted is None:
        total.drafted_per_position = total.step_accepted_per_position = None
        total.step_count = total.step_draft_tokens = None
        return
    if total.detailed_requests != total.requests - 1:  # an earlier request had none
        return
    total.detailed_requests += 1
    drafted, accepted = [int(x) for x in drafted], [int(x) for x in accepted]
    total.drafted_per_position = _add(total.drafted_per_position or [], _at_least(drafted))
    total.step_accepted_per_position = _add(total.step_accepted_per_position or [], _at_least(accepted))
    total.step_count = (total.step_count or 0) + len(drafted)
    total.step_draft_tokens = (total.step_draft_tokens or 0) + sum(drafted)


def from_requests(spec_metrics: Iterable[dict[str, Any] | None]) -> Acceptance | None:
    """Sum per-request `metrics.speculative_decoding` objects; None when no request carried one (baseline)."""
    total = None
    for s in spec_metrics:
        total = add_request(total, s)
    return total


def from_delta(delta: Delta) -> Acceptance | None:
    """Acceptance seen by the server counters over a window; None when the server has no spec counters."""
    if m.SPEC_NUM_DRAFTS not in delta.counters:
        return None
    return Acceptance(
        steps=delta.get(m.SPEC_NUM_DRAFTS),
        draft_tokens=delta.get(m.SPEC_NUM_DRAFT_TOKENS),
        accepted=delta.get(m.SPEC_NUM_ACCEPTED_TOKENS),
        per_position=delta.per_position(),
    )


@dataclass
class Check:
    name: str
    expected: object  # from the responses / bench JSON
    actual: object  # from the /metrics diff
    ok: bool
    hint: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


_CAUSE = (
    "likely cause: other traffic inside the window (warm-ups, probes, another client), requests with "
    "n>1 or ended by a stop string (they reach the counters but carry no per-request metrics), "
    "or a server started with --disable-log-stats"
)


def crosscheck_requests(requests: Acceptance | None, counters: Acceptance | None) -> list[Check]:
    """Every identity between the per-request sums and the counter deltas of one window."""
    if requests is None and counters is None:
        return []  # plain decode: nothing to reconcile
    if counters is None:
        return [
            Check(
                "server exposes vllm:spec_decode_* counters",
                "present",
                "absent",
                False,
                "responses carry speculative metrics but /metrics has no spec counters",
            )
        ]
    if requests is None:
        return [
            Check(
                "responses carry metrics.speculative_decoding",
                "present",
                "absent",
                False,
                "start spec methods with --per-request-spec-decode-metrics and send n=1 requests",
            )
        ]
    k = max(len(counters.per_position), len(requests.per_position))
    req_pos = requests.per_position + [0] * (k - len(requests.per_position))
    cnt_pos = counters.per_position + [0] * (k - len(counters.per_position))
    checks = [
        Check("Σ num_spec_steps = Δ num_drafts", requests.steps, counters.steps, requests.steps == counters.steps),
        Check(
            "Σ num_draft_tokens = Δ num_draft_tokens",
            requests.draft_tokens,
            counters.draft_tokens,
            requests.draft_tokens == counters.draft_tokens,
        ),
        Check(
            "Σ num_accepted_draft_tokens = Δ num_accepted_tokens",
            requests.accepted,
            counters.accepted,
            requests.accepted == counters.accepted,
        ),
        Check(
            "Σ_p Δ accepted_per_pos[p] = Δ num_accepted_tokens",
            counters.accepted,
            sum(cnt_pos),
            counters.accepted == sum(cnt_pos),
        ),
    ]
    checks += [
        Check(
            f"Δ accepted_per_pos[{p}] = Σ_req Σ_(j>{p}) histogram[j]", req_pos[p], cnt_pos[p], req_pos[p] == cnt_pos[p]
        )
        for p in range(k)
    ]
    checks += _crosscheck_steps(requests, counters, cnt_pos)
    for c in checks:
        if not c.ok:
            c.hint = _CAUSE
    return checks


def _crosscheck_steps(requests: Acceptance, counters: Acceptance, cnt_pos: list[int]) -> list[Check]:
    """The per-step arrays (the conditional rates' source) against the counters: one entry per counted step,
    their drafts summing to the drafted tokens, their acceptances per position to the position counters."""
    if requests.drafted_per_position is None:
        return []  # summary level: no arrays, no conditional rates
    pos = requests.step_accepted_per_position or []
    k = max(len(pos), len(cnt_pos))
    pos, cnt_pos = pos + [0] * (k - len(pos)), cnt_pos + [0] * (k - len(cnt_pos))
    return [
        Check(
            "Σ len(per_step_drafted) = Δ num_drafts",
            requests.step_count,
            counters.steps,
            requests.step_count == counters.steps,
        ),
        Check(
            "Σ per_step_drafted = Δ num_draft_tokens",
            requests.step_draft_tokens,
            counters.draft_tokens,
            requests.step_draft_tokens == counters.draft_tokens,
        ),
    ] + [
        Check(f"Δ accepted_per_pos[{p}] = Σ_steps [per_step_accepted > {p}]", pos[p], cnt_pos[p], pos[p] == cnt_pos[p])
        for p in range(k)
    ]


def crosscheck_bench_answers(
    bench: dict[str, Any], finished: int, generated: int, output_len: int | None
) -> list[Check]:
    """Every answer `vllm bench serve` counted as completed was finished by vLLM at full length.

    Bench 0.32.0 counts a stream cut after its first chunk as a success (endpoint_request_func.py, async
    request functions: success = first_chunk_received), so its own `failed` misses answers a gateway or a
    dying server cut short, and its throughput would include them. With a fixed output length (--ignore-eos)
    a cut answer shows in the token totals; an answer vLLM never finished shows in request_success."""
    completed = int(bench.get("completed") or 0)
    hint = "an answer was cut short or never finished: bench's speed figures include it"
    checks = [Check("bench completed = Δ vllm:request_success", completed, finished, completed == finished, hint)]
    if output_len:
        want = completed * output_len
        total = int(bench.get("total_output_tokens") or 0)
        checks += [
            # expected: what bench reports (its own total; completed × length); actual: what the check holds it to
            Check(f"bench total_output_tokens = completed × {output_len}", total, want, total == want, hint),
            Check(
                f"bench completed × {output_len} = Δ vllm:generation_tokens", want, generated, generated == want, hint
            ),
        ]
    return checks


def crosscheck_bench(bench: dict[str, Any], counters: Acceptance | None) -> list[Check]:
    """`vllm bench serve`'s own spec_decode_* fields against the collector's diff around the command."""
    has_fields = "spec_decode_draft_tokens" in bench
    if counters is None:
        return (
            []
            if not has_fields
            else [
                Check(
                    "server exposes vllm:spec_decode_* counters",
                    "present",
                    "absent",
                    False,
                    "bench saw spec fields the collector did not",
                )
            ]
        )
    if not has_fields:
        # bench writes the fields only when its own draft-token delta is > 0 (serve.py:1332-1344).
        return [
            Check(
                "bench reports no drafts ⇔ Δ num_draft_tokens = 0",
                0,
                counters.draft_tokens,
                counters.draft_tokens == 0,
                "bench found no draft tokens in its own window",
            )
        ]
    hint = (
        "likely cause: traffic outside bench's own window (its warm-ups or another client) "
        "or counters read before they settled"
    )
    checks = [
        Check(
            "bench spec_decode_num_drafts = Δ num_drafts",
            int(bench["spec_decode_num_drafts"]),
            counters.steps,
            int(bench["spec_decode_num_drafts"]) == counters.steps,
        ),
        Check(
            "bench spec_decode_draft_tokens = Δ num_draft_tokens",
            int(bench["spec_decode_draft_tokens"]),
            counters.draft_tokens,
            int(bench["spec_decode_draft_tokens"]) == counters.draft_tokens,
        ),
        Check(
            "bench spec_decode_accepted_tokens = Δ num_accepted_tokens",
            int(bench["spec_decode_accepted_tokens"]),
            counters.accepted,
            int(bench["spec_decode_accepted_tokens"]) == counters.accepted,
        ),
    ]
    rates = bench.get("spec_decode_per_position_acceptance_rates") or []
    mine = counters.per_position_rates or []
    for p, rate in enumerate(rates):
        got = mine[p] if p < len(mine) else None
        checks.append(
            Check(
                f"bench per-position rate[{p}] = Δ per_pos[{p}] / Δ num_drafts",
                rate,
                got,
                got is not None and abs(rate - got) <= 1e-9,
            )
        )
    for c in checks:
        if not c.ok:
            c.hint = hint
    return checks
