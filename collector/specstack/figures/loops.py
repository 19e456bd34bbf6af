"""Degenerate answers: a greedy answer that fell into a repetition loop ("1.1.1.1…", one sentence again and again
until max_tokens). Such an answer is its own best draft, so ngram and suffix accept nearly every token of it: it
inflates their acceptance and says nothing about the task. The rule is on the answer's token ids (docs/figures.md,
"repetition loop"):

    the answer ran to max_tokens (finish_reason "length"), and it ends in a run of tokens that repeats with a
    period p of 1 to MAX_PERIOD tokens (every token of the run equals the token p before it), the run holding at
    least two whole periods and at least MIN_RUN tokens.

Exact repetition only: an answer that counts on ("def scale_25 … def scale_26 …") is not a loop, and neither is an
answer that repeated itself and then stopped on its own (EOS)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

MAX_PERIOD = 64  # tokens: the longest repeated unit looked for (seen: 2 for "1.", 52-62 for a sentence pair)
MIN_RUN = 32  # tokens: a shorter periodic tail ("1. 1. 1.") may be a list the answer was writing


def periodic_tail(tokens: Sequence[int], max_period: int = MAX_PERIOD) -> tuple[int, int | None]:
    """(run, period): the longest run at the end of `tokens` in which every token equals the one `period` before
    it, counting the run's first period (so a unit seen twice gives run = 2 × period); (0, None) when no period
    repeats a whole unit. Ties go to the shorter period."""
    best: tuple[int, int | None] = (0, None)
    n = len(tokens)
    for p in range(1, min(max_period, n // 2) + 1):
        i = n - 1
        while i - p >= 0 and tokens[i] == tokens[i - p]:
            i -= 1
        run = (n - 1 - i) + p
        if run >= 2 * p and run > best[0]:
            best = (run, p)
    return best


def is_loop(tokens: Sequence[int] | None, finish_reason: str | None) -> bool | None:
    """Whether an answer is a repetition loop by the module's rule; None when it cannot be said (no token ids)."""
    if tokens is None:
        return None
    if finish_reason != "length":
        return False
    run, _ = periodic_tail(tokens)
    return run >= MIN_RUN


def loop_of(record: Mapping[str, Any]) -> dict[str, Any]:
    """A request record's (results/records.py request_fields) loop verdict with the run and period it rests on."""
    tokens = record.get("token_ids")
    loop = is_loop(tokens, record.get("finish_reason"))
    run, period = periodic_tail(tokens) if tokens is not None else (0, None)
    return {"loop": loop, "run": run if loop else None, "period": period if loop else None}


def acceptance_without(records: Sequence[Mapping[str, Any]], left_out: set[str]) -> dict[str, Any]:
    """Acceptance over the requests not in `left_out` (ids), summed first, then divided (docs/figures.md): steps,
    drafts and accepted drafts from each request's own metrics; the rate and mean length None where nothing was
    drafted (n/a, never 0 %)."""
    steps = drafts = accepted = requests = 0
    for r in records:
        spec = r.get("spec")
        if r.get("error") or r["id"] in left_out:
            continue
        requests += 1
        if not spec:  # plain decode: nothing drafted
            continue
        steps += int(spec.get("num_spec_steps") or 0)
        drafts += int(spec.get("num_draft_tokens") or 0)
        accepted += int(spec.get("num_accepted_draft_tokens") or 0)
    return {
        "requests": requests,
        "num_spec_steps": steps,
        "num_draft_tokens": drafts,
        "num_accepted_draft_tokens": accepted,
        "acceptance_rate": accepted / drafts if drafts else None,
        "mean_acceptance_length": 1 + accepted / steps if steps else None,
    }
