"""Output equality of two answers to one request: equal, or the first diverging index in tokens (given a
tokenizer) and in characters; why a pair of records is not compared at all; and, where a greedy answer differs
from the baseline's, whether the baseline's own choice there was a near tie. The report (report/equality.py,
against the baseline) and compare (compare/outputs.py, run A against run B) both judge with these."""
from __future__ import annotations

from typing import Any, Mapping, Protocol, Sequence

from specstack.figures import stats as st


class Encoder(Protocol):
    """What a tokenizer must do here (transformers' tokenizers do)."""
    def encode(self, text: str, add_special_tokens: bool = ...) -> list[int]: ...


def not_compared(a: Mapping[str, Any], b: Mapping[str, Any] | None, missing: str) -> str | None:
    """Why two acceptance records of one request id are not compared (None: they are). `missing` says which
    side lacks the id, in the caller's words (the baseline, run B)."""
    if b is None:
        return missing
    if a["error"] or b["error"]:
        return "failed request: " + "; ".join(x for x in (a["error"], b["error"]) if x)
    if a["text"] is None or b["text"] is None:
        return "no text in a response"
    if a["messages"] != b["messages"]:
        return "different prompts under the same id; not compared"
    return None


def compare_texts(a: str, b: str, tokenizer: Encoder | None = None) -> dict[str, Any]:
    """Equality and first divergence of two outputs; token index when a tokenizer is given."""
    if a == b:
        return {"equal": True, "first_token_divergence": None, "first_char_divergence": None}
    out = {"equal": False, "first_char_divergence": st.first_divergence(a, b), "first_token_divergence": None}
    if tokenizer is not None:
        out["first_token_divergence"] = st.first_divergence(tokenizer.encode(a, add_special_tokens=False),
                                                            tokenizer.encode(b, add_special_tokens=False))
    return out


# A greedy choice closer than this (in nats, the log-probability gap between the chosen token and the other) is
# a near tie: bf16 keeps 8 significant bits, so a logit in [16, 32) is a multiple of 1/8 and one in [32, 64) of 1/4,
# and a trained model's top logits lie there (SmolLM2-135M-Instruct: 16-42 at every first divergence of its CPU
# run). A speculative verify step runs the target over K + 1 positions at once where plain decode runs one, so its
# sums are rounded in another order and its logits land a step or two away: such a choice can flip
# (docs/greedy-divergence.md: measured on the trained model, every divergence of the CPU run is one, and none is
# left in float32). 0.25 nats = two steps of a logit in [16, 32).
NEAR_TIE_NATS = 0.25

# What each kind of divergence is consistent with (the report's words).
CAUSES = {"exact tie": "bf16 numerics: the two logits are equal in bf16, the verify pass rounds the other way",
          "near tie": "bf16 numerics: within two bf16 steps, the verify pass rounds the other way",
          "not a tie": "not bf16 rounding: a change the method made"}


def divergence_at_baseline(mine: Sequence[int] | None, theirs: Sequence[int] | None,
                           their_top: Sequence[Sequence[Sequence[float]]] | None) -> dict[str, Any]:
    """Where two greedy answers' token ids first differ, how the baseline rated the method's token there
    (`their_top`: the baseline's top log-probabilities per position, [[token_id, logprob], ...]):
    `gap_nats` (the baseline's token's log-probability minus the method's token's), `kind` and `cause` (CAUSES):
    "exact tie" (gap 0: the same bf16 logit), "near tie" (gap <= NEAR_TIE_NATS), "not a tie"; a method's token
    outside the baseline's top is "not a tie" only when the baseline's last listed token is already further
    behind than a near tie, else "unknown". kind None when it cannot be said at all (no token ids or
    log-probabilities, or one answer ended where the other went on)."""
    out: dict[str, Any] = {"token_index": None, "gap_nats": None, "kind": None, "cause": None}
    if mine is None or theirs is None:
        return out
    i = st.first_divergence(mine, theirs)
    out["token_index"] = i
    if i is None or i >= len(mine) or i >= len(theirs) or their_top is None or i >= len(their_top):
        return out
    top = {int(token): float(logprob) for token, logprob in their_top[i]}
    if theirs[i] not in top:   # the baseline's own choice is always among its top: a record that says otherwise
        return out             # is not this server's answer
    if mine[i] not in top:
        # the method's token is at least as far behind as the last token listed
        if top[theirs[i]] - min(top.values()) > NEAR_TIE_NATS:
            out["kind"] = f"not a tie (outside the baseline's top {len(top)})"
            out["cause"] = CAUSES["not a tie"]
        else:
            out["kind"] = f"unknown (outside the baseline's top {len(top)}, which are within a near tie)"
        return out
    out["gap_nats"] = gap = top[theirs[i]] - top[mine[i]]
    out["kind"] = "exact tie" if gap == 0 else "near tie" if gap <= NEAR_TIE_NATS else "not a tie"
    out["cause"] = CAUSES[out["kind"]]
    return out


def is_near_tie(kind: str | None) -> bool:
    """Whether a divergence's kind is a tie within bf16 resolution (exact or near)."""
    return kind in ("exact tie", "near tie")
