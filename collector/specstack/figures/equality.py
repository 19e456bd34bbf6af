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
# a near tie: bf16 keeps 8 significant bits, so a logit between 8 and 16 is a multiple of 1/16 and two logits can
# move 0.06-0.125 apart from rounding alone. A speculative verify step runs the target over K + 1 positions at
# once where plain decode runs one, so the sums are taken in another order and such a choice can flip.
NEAR_TIE_NATS = 0.1


def divergence_at_baseline(mine: Sequence[int] | None, theirs: Sequence[int] | None,
                           their_top: Sequence[Sequence[Sequence[float]]] | None) -> dict[str, Any]:
    """Where two greedy answers' token ids first differ, how the baseline rated the method's token there
    (`their_top`: the baseline's top log-probabilities per position, [[token_id, logprob], ...]):
    `gap_nats` (the baseline's token's log-probability minus the method's token's) and `kind`: "near tie"
    (gap <= NEAR_TIE_NATS), "not a tie", or None when it cannot be said (no token ids or log-probabilities, or
    one answer ended where the other went on)."""
    out: dict[str, Any] = {"token_index": None, "gap_nats": None, "kind": None}
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
        out["kind"] = f"not a tie (outside the baseline's top {len(top)})"
        return out
    out["gap_nats"] = top[theirs[i]] - top[mine[i]]
    out["kind"] = "near tie" if out["gap_nats"] <= NEAR_TIE_NATS else "not a tie"
    return out
