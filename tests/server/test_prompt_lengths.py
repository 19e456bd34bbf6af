"""The max model length the prompt check holds prompts to (server/prompt_lengths.py), where the plan gives none:
vLLM's own keys of config.json, the smallest present; left unchecked where RoPE scaling would change it. The
counts themselves are checked against the real server: cli/test_bad_input.py::
test_prompt_tokens_are_counted_as_the_server_counts_them."""

from __future__ import annotations

import json

import pytest

from specstack.config.methods import ServePlan
from specstack.server import prompt_lengths
from tests.support import serve_plan

pytestmark = pytest.mark.unit


def plan(tmp_path, config: dict, **flags) -> ServePlan:
    (tmp_path / "config.json").write_text(json.dumps(config))
    return serve_plan(target=str(tmp_path), flags=flags)


def test_the_plans_max_model_len_wins(tmp_path):
    assert (
        prompt_lengths.max_model_len(plan(tmp_path, {"max_position_embeddings": 32768}, **{"max-model-len": 4096}))
        == 4096
    )


@pytest.mark.parametrize(
    "config, expected",
    [
        ({"max_position_embeddings": 32768}, 32768),
        ({"max_position_embeddings": 32768, "seq_length": 8192}, 8192),  # the smallest key
        ({"text_config": {"max_position_embeddings": 2048}}, 2048),  # a multimodal config's text part
        ({"max_position_embeddings": 32768, "rope_scaling": {"rope_type": "linear", "factor": 4}}, None),
        ({"hidden_size": 128}, None),  # no key: vLLM assumes, not us
    ],
    ids=["max_position_embeddings", "smallest", "text_config", "rope-scaling", "none"],
)
def test_the_config_keys_vllm_reads(tmp_path, config, expected):
    assert prompt_lengths.max_model_len(plan(tmp_path, config)) == expected


def test_nothing_is_refused_without_the_tokenizer_on_disk(tmp_path):
    """A hub model not downloaded yet: never fetched for this check, so not checked."""
    p = serve_plan(target="nobody/not-a-model-here", flags={"max-model-len": 8})
    assert prompt_lengths.problems(p, {}, perf_output_len=4, chat_kwargs={}) == []
