"""The cause of the trained model's greedy divergences on the CPU, reproduced in-process (probes/verify_numerics.py,
docs/greedy-divergence.md): at the position where ngram's greedy answer left the baseline's in the CPU run
(code-002, "def scale_0" against "def scale_1"), the target's bf16 logits depend on the shape of the forward pass
that computes them, and the two tokens are tied within bf16's resolution, so plain decode and a verify step choose
differently; in float32 every shape gives the same logits to ~1e-4 and the same token."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specstack.figures.equality import NEAR_TIE_NATS, divergence_at_baseline
from specstack.probes.verify_numerics import compare_paths

pytestmark = pytest.mark.integration

CASE = json.loads((Path(__file__).parent / "data" / "smollm2_code002_divergence.json").read_text())
WIDTHS = (0, 1, 3)  # 0: plain decode, one token a pass; w: a verify pass scoring the last w positions at once


@pytest.fixture(scope="module")
def paths(smollm2_models):
    import torch
    from transformers import AutoModelForCausalLM

    out = {}
    for dtype in (torch.bfloat16, torch.float32):
        model = AutoModelForCausalLM.from_pretrained(smollm2_models["target"], dtype=dtype).eval()
        out[dtype] = compare_paths(
            model,
            CASE["prompt_token_ids"],
            CASE["baseline_answer_prefix"],
            CASE["position"],
            (CASE["baseline_token"], CASE["ngram_token"]),
            WIDTHS,
        )
    return out


def test_the_engine_recorded_an_exact_tie_where_ngram_left_the_baseline():
    at = divergence_at_baseline(
        [*CASE["baseline_answer_prefix"], CASE["ngram_token"]],
        [*CASE["baseline_answer_prefix"], CASE["baseline_token"]],
        [[]] * CASE["position"] + [CASE["baseline_top_logprobs"]],
    )
    assert at["token_index"] == CASE["position"] and at["kind"] == "exact tie"


def test_in_bf16_the_shape_of_the_pass_moves_the_logits_and_flips_the_tie(paths):
    import torch

    bf16 = paths[torch.bfloat16]
    assert max(p["max_change"] for p in bf16.values()) >= 0.125  # at least one bf16 step of a logit of 16-32
    assert all(abs(p["gap"]) <= NEAR_TIE_NATS for p in bf16.values())  # a tie within bf16 resolution in every path
    chosen = {p["argmax"] for p in bf16.values()}
    assert chosen == {CASE["baseline_token"], CASE["ngram_token"]}, bf16  # plain decode and a verify pass disagree


def test_in_float32_every_shape_gives_the_same_logits_and_the_same_token(paths):
    import torch

    fp32 = paths[torch.float32]
    assert max(p["max_change"] for p in fp32.values()) < 1e-3
    assert len({p["argmax"] for p in fp32.values()}) == 1
    assert abs(fp32[0]["gap"]) < NEAR_TIE_NATS  # the two tokens are a genuine near tie, not a bf16 artefact
