"""The tiny local models: loadable with stock transformers, consistent vocabularies, Qwen3-style chat
template, idempotent and deterministic builds. No server (the real-vLLM checks live elsewhere)."""
from __future__ import annotations

import hashlib
import json

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

from transformers import AutoConfig, AutoTokenizer  # noqa: E402

from specstack import tiny_models  # noqa: E402

NAMES = ("tiny-qwen3", "tiny-qwen3-draft", "tiny-eagle3", "tiny-mimo")
WITH_TOKENIZER = ("tiny-qwen3", "tiny-qwen3-draft", "tiny-mimo")


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    out = tmp_path_factory.mktemp("models")
    return out, tiny_models.build_all(out)


def _sha(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_folder_names_match_methods_toml(models):
    _, paths = models
    assert set(paths) == set(NAMES)
    import tomllib
    from pathlib import Path

    toml = tomllib.loads((Path(__file__).parents[1] / "services" / "methods.toml").read_text())
    assert sorted(v.replace("{models}/", "") for v in toml["model_sets"]["tiny"].values()) == sorted(NAMES)


def test_configs_and_tokenizers_load(models):
    _, paths = models
    cfg = {name: AutoConfig.from_pretrained(paths[name]) for name in NAMES}
    target = cfg["tiny-qwen3"]
    assert target.architectures == ["Qwen3ForCausalLM"]
    assert (target.hidden_size, target.num_hidden_layers, target.num_attention_heads,
            target.num_key_value_heads, target.head_dim) == (128, 2, 4, 2, 32)
    assert target.max_position_embeddings >= 4096  # the common serve args use --max-model-len 4096
    assert cfg["tiny-qwen3-draft"].num_hidden_layers == 1
    assert cfg["tiny-mimo"].architectures[0] == "MiMoForCausalLM"
    assert cfg["tiny-mimo"].num_nextn_predict_layers == 1

    eagle = cfg["tiny-eagle3"]
    assert eagle.architectures == ["LlamaForCausalLMEagle3"]
    assert eagle.eagle_aux_hidden_state_layer_ids == [0, 1, 2]
    verifier = (paths["tiny-eagle3"] / eagle.verifier["name_or_path"]).resolve()
    assert verifier == paths["tiny-qwen3"].resolve()

    vocab = {c.vocab_size for c in cfg.values()} | {eagle.draft_vocab_size}
    assert len(vocab) == 1  # vLLM requires draft and target vocab sizes to be equal
    for name in WITH_TOKENIZER:
        tok = AutoTokenizer.from_pretrained(paths[name])
        assert len(tok) == target.vocab_size
        assert tok.convert_tokens_to_ids(tok.eos_token) == target.eos_token_id
        gen = json.loads((paths[name] / "generation_config.json").read_text())
        assert target.eos_token_id in gen["eos_token_id"]


def test_weights_have_the_layout_vllm_expects(models):
    from safetensors import safe_open

    _, paths = models

    def keys(name):
        with safe_open(str(paths[name] / "model.safetensors"), "pt") as f:
            return set(f.keys())

    eagle = keys("tiny-eagle3")
    assert {"fc.weight", "norm.weight", "lm_head.weight", "embed_tokens.weight",
            "midlayer.self_attn.q_proj.weight", "midlayer.hidden_norm.weight"} <= eagle
    with safe_open(str(paths["tiny-eagle3"] / "model.safetensors"), "pt") as f:
        assert list(f.get_slice("fc.weight").get_shape()) == [128, 3 * 128]
        assert list(f.get_slice("midlayer.self_attn.q_proj.weight").get_shape()) == [128, 2 * 128]
    mtp = {k for k in keys("tiny-mimo") if k.startswith("model.mtp_layers.0.")}
    assert {"model.mtp_layers.0.input_proj.weight", "model.mtp_layers.0.token_layernorm.weight",
            "model.mtp_layers.0.hidden_layernorm.weight", "model.mtp_layers.0.final_layernorm.weight",
            "model.mtp_layers.0.self_attn.q_proj.bias"} <= mtp
    assert not any(k.startswith("model.layers.1.") for k in keys("tiny-qwen3-draft"))


def test_chat_template_empty_think_block(models):
    _, paths = models
    tok = AutoTokenizer.from_pretrained(paths["tiny-qwen3"])
    messages = [{"role": "user", "content": "hi"}]
    off = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True, enable_thinking=False)
    assert off == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
    on = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert on.endswith("<|im_start|>assistant\n")
    # The specials are single tokens, never split by BPE.
    ids = tok(off)["input_ids"]
    for special in ("<|im_start|>", "<|im_end|>", "<think>", "</think>"):
        assert tok.convert_tokens_to_ids(special) in ids


def test_build_twice_is_a_noop(models):
    out, paths = models
    before = {name: (p / "model.safetensors").stat().st_mtime_ns for name, p in paths.items()}
    assert tiny_models.build_all(out) == paths
    assert {name: (p / "model.safetensors").stat().st_mtime_ns for name, p in paths.items()} == before


def test_stale_stamp_rebuilds(tmp_path, models, monkeypatch):
    _, ref = models
    tiny_models.build_all(tmp_path)
    monkeypatch.setattr(tiny_models, "RECIPE_VERSION", tiny_models.RECIPE_VERSION + "-next")
    (tmp_path / "tiny-qwen3" / "model.safetensors").write_bytes(b"junk")
    tiny_models.build_all(tmp_path)
    # Rebuilt, and deterministic: the same bytes as the build in another folder.
    for name in NAMES:
        assert _sha(tmp_path / name / "model.safetensors") == _sha(ref[name] / "model.safetensors")


def test_cli_subcommand(tmp_path, monkeypatch, capsys):
    from specstack.cli import main

    calls = []
    monkeypatch.setattr(tiny_models, "build_all", lambda out, force=False: calls.append((out, force)) or {})
    monkeypatch.setenv("SPECSTACK_MODELS", str(tmp_path / "env"))
    assert main(["tiny-models"]) == 0
    assert main(["tiny-models", "--out", str(tmp_path / "x"), "--force"]) == 0
    assert [(str(o), f) for o, f in calls] == [(str(tmp_path / "env"), False), (str(tmp_path / "x"), True)]
