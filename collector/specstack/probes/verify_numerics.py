"""The reproduction of the trained model's greedy divergences (docs/greedy-divergence.md): the target's logits for
one answer position computed the way plain decode computes them (one token per forward pass after the prefill)
and the way a speculative verify step does (the last w tokens scored in one forward pass over the cached prefix),
in bf16 and in float32, in-process with transformers. In bf16 the two ways round differently and a near tie flips;
in float32 they agree to ~1e-4 and pick the same token."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def next_token_logits(model: Any, prompt: Sequence[int], answer: Sequence[int], position: int, width: int = 0) -> Any:
    """float32 logits of the token at answer[position], given prompt + answer[:position]. width 0: plain decode
    (the prompt in one prefill, then one token per forward pass with the KV cache); width w ≥ 1: a verify step
    (the prompt and answer[:position - w] cached, then answer[position - w:position] in one forward pass)."""
    import torch

    with torch.no_grad():
        if width == 0:
            out = model(torch.tensor([list(prompt)]), use_cache=True)
            for token in answer[:position]:
                out = model(torch.tensor([[token]]), past_key_values=out.past_key_values, use_cache=True)
        else:
            start = max(0, position - width)
            out = model(torch.tensor([list(prompt) + list(answer[:start])]), use_cache=True)
            if position > start:
                out = model(
                    torch.tensor([list(answer[start:position])]), past_key_values=out.past_key_values, use_cache=True
                )
        return out.logits[0, -1].float()


def compare_paths(
    model: Any,
    prompt: Sequence[int],
    answer: Sequence[int],
    position: int,
    tokens: tuple[int, int],
    widths: Sequence[int] = (0, 1, 2, 3),
) -> dict[int, dict[str, float | int]]:
    """Per width (0: plain decode): the chosen token (argmax), the gap logit[tokens[0]] − logit[tokens[1]], and
    the largest change of any logit against plain decode."""
    logits = {w: next_token_logits(model, prompt, answer, position, w) for w in widths}
    a, b = tokens
    return {
        w: {
            "argmax": int(v.argmax()),
            "gap": float(v[a] - v[b]),
            "max_change": float((v - logits[widths[0]]).abs().max()),
        }
        for w, v in logits.items()
    }
