"""Output equality of two answers to one request: equal, or the first diverging index in tokens (given a
tokenizer) and in characters; why a pair of records is not compared at all; and, where a greedy answer differs
from the baseline's, whether the baseline's own choice there was a near tie. The report (report/equality.py,
against the baseline) and compare (compare/outputs.py, run A against run B) both judge with these."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, TypedDict

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


class TextComparison(TypedDict):
    """What compare_texts says of two outputs: the report's equality_requests rows and compare's output rows take
    these three (compare names `equal` `same`)."""

    equal: bool
    first_token_divergence: int | None  # None: equal, or no tokenizer
    first_char_divergence: int | None  # None: equal


def compare_texts(a: str, b: str, tokenizer: Encoder | None = None) -> TextComparison:
    """Equality and first divergence of two outputs; token index when a tokenizer is given."""
    if a == b:
        return {"equal": True, "first_token_divergence": None, "first_char_divergence": None}
    out: TextComparison = {
        "equal": False,
        "first_char_divergence": st.first_divergence(a, b),
        "first_token_divergence": None,
    }
    if tokenizer is not None:
        out["first_token_divergence"] = st.first_divergence(
            tokenizer.encode(a, add_special_tokens=False), tokenizer.encode(b, add_special_tokens=False)
        )
    return out


# A greedy choice closer than this (in nats, the log-probability gap between the chosen token and the other) is
# a near tie: bf16 keeps 8 significant bits, so a logit in [16, 32) is a multiple of 1/8 and one in [32, 64) of 1/4,
# and a trained model's top logits lie there (SmolLM2-135M-Instruct: 16-42 at every first divergence of its CPU
# run). A speculative verify step runs the target over K + 1 positions at once where plain decode runs one, so its
# sums are rounded in another order and its logits land a step or two away: such a choice can flip
# (docs/greedy-divergence.md: measured on the trained model, every divergence of the CPU run is one; in float32 the
# two shapes agree to 3e-5). 0.25 nats = two steps of a logit in [16, 32).
NEAR_TIE_NATS = 0.25

# The served dtype -> (its short name, the near-tie bound in nats, how the report words that bound). bf16 and fp16:
# two steps of a logit in [16, 32) (8 and 11 significant bits). fp32: its own step there is 2e-6, but a verify pass
# of another shape adds the rounding of every layer (and a GPU may run fp32 matmuls as TF32), so the bound is not
# the format's: 1e-3 nats, an order above the largest logit change measured between plain decode and a verify pass
# in fp32 (3e-5, the trained model in transformers, docs/greedy-divergence.md), which the H200 engine's fp32 run
# bears out (its two divergences at 1.3e-5 and 1.8e-4 nats, docs/gpu.md).
NUMERICS = {
    "bfloat16": ("bf16", NEAR_TIE_NATS, "within two bf16 steps"),
    "float16": ("fp16", 2**-5, "within two fp16 steps"),
    "float32": ("fp32", 1e-3, "within 0.001 nats (a pass of another shape rounds through every layer)"),
}
DTYPE_NAMES = {"bf16": "bfloat16", "half": "float16", "fp16": "float16", "float": "float32", "fp32": "float32"}


def numerics(dtype: str | None) -> tuple[str, float, str]:
    """NUMERICS of the served dtype (vLLM's --dtype, its aliases too); bf16's, named "(assumed)", where none is
    recorded, or it is "auto" or one this table does not know: the trained models served here are bf16."""
    key = DTYPE_NAMES.get(dtype or "", dtype or "")
    if key in NUMERICS:
        return NUMERICS[key]
    name, bound, words = NUMERICS["bfloat16"]
    return f"{name} (assumed: dtype {dtype or 'not recorded'})", bound, words


def causes(dtype: str | None = None) -> dict[str, str]:
    """What each kind of divergence is consistent with (the report's words), for a server of this dtype."""
    name, _, words = numerics(dtype)
    short = name.split(" ")[0]
    return {
        "exact tie": f"{name} numerics: the two logits are equal in {short}, the verify pass rounds the other way",
        "near tie": f"{name} numerics: {words}, the verify pass rounds the other way",
        "not a tie": f"not {short} rounding: a change the method made",
    }


CAUSES = causes("bfloat16")


def divergence_at_baseline(
    mine: Sequence[int] | None,
    theirs: Sequence[int] | None,
    their_top: Sequence[Sequence[Sequence[float]]] | None,
    dtype: str | None = None,
) -> dict[str, Any]:
    """Where two greedy answers' token ids first differ, how the baseline rated the method's token there
    (`their_top`: the baseline's top log-probabilities per position, [[token_id, logprob], ...]):
    `gap_nats` (the baseline's token's log-probability minus the method's token's), `kind` and `cause` (CAUSES):
    "exact tie" (gap 0: the same logit), "near tie" (gap <= the near-tie bound of the baseline's served `dtype`,
    NUMERICS), "not a tie"; a method's token outside the baseline's top is "not a tie" only when the baseline's
    last listed token is already further behind than a near tie, else "unknown". kind None when it cannot be said at all (no token ids or
    log-probabilities, or one answer ended where the other went on)."""
    out: dict[str, Any] = {"token_index": None, "gap_nats": None, "kind": None, "cause": None}
    _, bound, _ = numerics(dtype)
    words = causes(dtype)
    if mine is None or theirs is None:
        return out
    i = st.first_divergence(mine, theirs)
    out["token_index"] = i
    if i is None or i >= len(mine) or i >= len(theirs) or their_top is None or i >= len(their_top):
        return out
    top = {int(token): float(logprob) for token, logprob in their_top[i]}
    if theirs[i] not in top:  # the baseline's own choice is always among its top: a record that says otherwise
        return out  # is not this server's answer
    if mine[i] not in top:
        # the method's token is at least as far behind as the last token listed
        if top[theirs[i]] - min(top.values()) > bound:
            out["kind"] = f"not a tie (outside the baseline's top {len(top)})"
            out["cause"] = words["not a tie"]
        else:
            out["kind"] = f"unknown (outside the baseline's top {len(top)}, which are within a near tie)"
        return out
    out["gap_nats"] = gap = top[theirs[i]] - top[mine[i]]
    out["kind"] = "exact tie" if gap == 0 else "near tie" if gap <= bound else "not a tie"
    out["cause"] = words[out["kind"]]
    return out


def is_near_tie(kind: str | None) -> bool:
    """Whether a divergence's kind is a tie within the served dtype's resolution (exact or near)."""
    return kind in ("exact tie", "near tie")
