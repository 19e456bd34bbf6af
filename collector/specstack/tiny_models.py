"""Deterministic tiny local models for tests and the demo (`specstack tiny-models`): no downloads, seconds.

Everything comes from text that ships with Python (stdlib sources, the pydoc topic texts, Python's
LICENSE), so any machine with the venv rebuilds the same folders (same Python, torch and tokenizers):
  * a byte-level BPE tokenizer (vocab 2048) with Qwen3's special tokens and chat template;
  * token-bigram statistics of that text, factored (SVD) into an embedding E and an lm_head L so that
    `L @ rmsnorm(E[x])` ranks the tokens that follow x. Every model shares E, L and the final norm;
  * one attention head with fixed weights acting as a repetition penalty, so greedy text wanders
    instead of looping on one token (it still repeats phrases, like small real models do);
  * transformer layers with random weights whose output projections (o_proj, down_proj) are scaled down,
    so each model is that bigram model plus small context-dependent perturbations. The draft, the
    EAGLE-3 head and the MTP layer differ from their target in those perturbations (and the EAGLE head
    in a stale penalty), which gives realistic acceptance: neither ~0 like unrelated random models nor
    exactly 100 % like identical ones.

Folder names match [model_sets.tiny] in services/methods.toml.
"""
from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import platform
import shutil
import sysconfig
from pathlib import Path

# Bump whenever anything below changes the built files: build_all() rebuilds on a different stamp.
RECIPE_VERSION = "1"
STAMP = ".specstack-tiny-models.json"
NAMES = ("tiny-qwen3", "tiny-qwen3-draft", "tiny-eagle3", "tiny-mimo")

VOCAB = 2048
HIDDEN, HEADS, KV_HEADS, HEAD_DIM, FFN = 128, 4, 2, 32, 256
MAX_POS = 4096  # the common serve args use --max-model-len 4096
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>"]
EOS = "<|im_end|>"
OUT_SCALE = 0.02  # o_proj / down_proj scale: layers perturb the bigram model instead of replacing it
PEN_DIM = HEAD_DIM               # hidden dims of the repetition-penalty head (one KV head wide)
BIGRAM = KV_HEADS * HEAD_DIM     # bigram rank: what the EAGLE head's values (2 KV heads x 32) can carry
PENALTY = 12.0    # nats a token loses when it fills the whole (recency-weighted) window
EOS_BIAS = 1.5    # nats added to <|im_end|> everywhere, so answers end sometimes
# Rope pairs of the penalty head (frequencies ROPE_THETA^(-i/16)): with 5 and 6 about half the
# attention falls on the last ~25 positions. (Qwen3 uses theta 1e6; its pairs would be too slow.)
ROPE_THETA = 10000.0
PENALTY_ROPE_PAIRS = (5, 6)
EAGLE_QK = 6.0          # EAGLE query/key amplitude: score gap ~30 between the attended position and the rest
EAGLE_ROPE_THETA = 1.5  # fast rope frequencies only: the score peaks sharply, with no revival up to 4096
CODE_FILES = ("argparse.py", "textwrap.py", "csv.py", "string.py", "functools.py", "dataclasses.py",
              "pathlib.py", "random.py", "statistics.py", "heapq.py", "bisect.py", "shutil.py",
              "difflib.py", "pprint.py", "calendar.py", "fractions.py", "json/encoder.py",
              "json/decoder.py", "contextlib.py", "fnmatch.py", "glob.py", "copy.py", "enum.py")

# Qwen3's template, reduced to what the harness sends: plain-text messages, no tools. With
# enable_thinking=false the generation prompt ends in an empty think block, as Qwen3's does.
CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}"
    "{{- '<|im_start|>assistant\\n' }}"
    "{%- if enable_thinking is defined and enable_thinking is false %}"
    "{{- '<think>\\n\\n</think>\\n\\n' }}"
    "{%- endif %}"
    "{%- endif %}"
)


def _chat(user: str, answer: str) -> str:
    return (f"<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n"
            f"<think>\n\n</think>\n\n{answer}<|im_end|>\n")


def _corpus() -> list[str]:
    """Training documents: stdlib code, English prose, and chat turns (so answers end in <|im_end|>)."""
    import pydoc_data.topics

    stdlib = Path(sysconfig.get_paths()["stdlib"])
    code = [(stdlib / f).read_text(encoding="utf-8") for f in CODE_FILES]
    prose = [pydoc_data.topics.topics[k] for k in sorted(pydoc_data.topics.topics)]
    prose.append((stdlib / "LICENSE.txt").read_text(encoding="utf-8"))
    paragraphs = [" ".join(p.split()) for doc in prose for p in doc.split("\n\n")
                  if len(p) > 200 and p[:1].isalpha()]
    chats = [_chat(paragraphs[i - 1][:200], p) for i, p in enumerate(paragraphs)]
    return [d + "<|endoftext|>" for d in code + prose] + chats


def _tokenizer(corpus: list[str]):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB, special_tokens=SPECIALS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus, trainer=trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=EOS, pad_token="<|endoftext|>",
                                   chat_template=CHAT_TEMPLATE, model_max_length=MAX_POS)


def _bigram_factors(tokenizer, corpus: list[str]):
    """E [V, H] and L [V, H] with L @ E[x] ~ log P(next | x) (up to a positive factor per row).

    Layout of the hidden dims: 0 is a constant 1 in every embedding (a position-independent feature the
    EAGLE head builds a constant query from; L ignores it), 1..BIGRAM hold the bigram factors, and the
    last PEN_DIM are empty in E: the repetition-penalty head writes there and L reads them back."""
    import numpy as np
    import torch

    counts = np.zeros((VOCAB, VOCAB))
    for enc in tokenizer.backend_tokenizer.encode_batch(corpus):
        a = np.asarray(enc.ids)
        np.add.at(counts, (a[:-1], a[1:]), 1)
    unigram = (counts.sum(0) + 1) / (counts.sum() + VOCAB)
    logp = np.log((counts + unigram) / (counts.sum(1, keepdims=True) + 1))
    logp -= logp.mean(1, keepdims=True)
    # Weight rows by frequency so the low-rank fit spends its capacity on common tokens (argmax per row
    # does not change under row scaling, so the weights are undone below).
    weight = np.sqrt(counts.sum(1) + 1)[:, None]
    with torch.random.fork_rng():
        torch.manual_seed(0)  # randomized SVD: seconds faster than a full one, and seeded
        u, s, v = torch.svd_lowrank(torch.tensor(logp * weight), q=BIGRAM + 10, niter=6)
    u, s, v = u[:, :BIGRAM].numpy(), s[:BIGRAM].numpy(), v[:, :BIGRAM].numpy()
    emb = u * np.sqrt(s) / weight
    # Same norm for every row (rms 1 overall): rmsnorm then leaves E unchanged.
    emb *= np.sqrt(HIDDEN - 1) / np.linalg.norm(emb, axis=1, keepdims=True)
    head = v * np.sqrt(s)
    # One global scale so logits are in nats again (frequency-weighted least squares fit to logp).
    fit = emb @ head.T
    head *= ((fit * logp) * weight ** 2).sum() / ((fit * fit) * weight ** 2).sum()
    E = np.zeros((VOCAB, HIDDEN))
    L = np.zeros((VOCAB, HIDDEN))
    E[:, 0] = 1.0
    E[:, 1:BIGRAM + 1] = emb
    L[:, 1:BIGRAM + 1] = head
    return torch.tensor(E, dtype=torch.float32), torch.tensor(L, dtype=torch.float32)


def _penalty_codes(gen, E, L):
    """M [PEN_DIM, HIDDEN] gives each token a code M @ E[x] (random projection of its bigram row, mean
    squared norm 1); L's last PEN_DIM columns hold PENALTY x that code, to read back what the penalty
    head writes."""
    import torch

    M = torch.zeros(PEN_DIM, HIDDEN)
    M[:, 1:BIGRAM + 1] = torch.randn(PEN_DIM, BIGRAM, generator=gen)
    M /= (E @ M.T).pow(2).sum(1).mean().sqrt()
    L[:, HIDDEN - PEN_DIM:] = PENALTY * (E @ M.T)
    return M


def _add_penalty_head(w: dict, prefix: str, M) -> None:
    """Turn query head 0 (KV head 0) into a built-in repetition penalty: a constant query and key on two
    slow rope frequencies attend mostly to recent positions, the values are those tokens' codes, and
    o_proj subtracts their mean in the dims where L reads every token's own code. A token that fills the
    window loses PENALTY nats, so greedy text moves on instead of cycling through the same bigrams.
    Head 1 shares that KV head and is silenced; heads 2-3 stay random."""
    import torch

    q, k = w[f"{prefix}.self_attn.q_proj.weight"], w[f"{prefix}.self_attn.k_proj.weight"]
    q[: 2 * HEAD_DIM] = 0
    k[:HEAD_DIM] = 0
    for pair in PENALTY_ROPE_PAIRS:  # read E's constant column: the same query/key at every position
        q[pair, 0] = k[pair, 0] = 4.0
    w[f"{prefix}.self_attn.v_proj.weight"][:HEAD_DIM] = M
    o = w[f"{prefix}.self_attn.o_proj.weight"]
    o[:, : 2 * HEAD_DIM] = 0
    o[HIDDEN - PEN_DIM:, :HEAD_DIM] = -torch.eye(PEN_DIM)


def _decoder_layer(gen, prefix: str, *, qwen2: bool = False) -> dict:
    """One Qwen decoder layer with random weights; output projections scaled down by OUT_SCALE."""
    import torch

    def rand(rows, cols, scale=1.0):
        return torch.randn(rows, cols, generator=gen) * (scale / cols ** 0.5)

    q, kv = HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM
    w = {
        "self_attn.q_proj.weight": rand(q, HIDDEN), "self_attn.k_proj.weight": rand(kv, HIDDEN),
        "self_attn.v_proj.weight": rand(kv, HIDDEN), "self_attn.o_proj.weight": rand(HIDDEN, q, OUT_SCALE),
        "mlp.gate_proj.weight": rand(FFN, HIDDEN), "mlp.up_proj.weight": rand(FFN, HIDDEN),
        "mlp.down_proj.weight": rand(HIDDEN, FFN, OUT_SCALE),
        "input_layernorm.weight": torch.ones(HIDDEN), "post_attention_layernorm.weight": torch.ones(HIDDEN),
    }
    if qwen2:  # Qwen2 attention has q/k/v biases and no q/k norms
        w.update({"self_attn.q_proj.bias": torch.zeros(q), "self_attn.k_proj.bias": torch.zeros(kv),
                  "self_attn.v_proj.bias": torch.zeros(kv)})
    else:
        w.update({"self_attn.q_norm.weight": torch.ones(HEAD_DIM), "self_attn.k_norm.weight": torch.ones(HEAD_DIM)})
    return {f"{prefix}.{k}": v for k, v in w.items()}


def _base_config(architecture: str, model_type: str, layers: int, eos_id: int, pad_id: int) -> dict:
    return {
        "architectures": [architecture], "model_type": model_type, "vocab_size": VOCAB,
        "hidden_size": HIDDEN, "intermediate_size": FFN, "num_hidden_layers": layers,
        "num_attention_heads": HEADS, "num_key_value_heads": KV_HEADS, "head_dim": HEAD_DIM,
        "hidden_act": "silu", "max_position_embeddings": MAX_POS, "rms_norm_eps": 1e-6,
        "rope_parameters": {"rope_type": "default", "rope_theta": ROPE_THETA},
        "tie_word_embeddings": False, "torch_dtype": "bfloat16", "use_cache": True,
        "bos_token_id": None, "eos_token_id": eos_id, "pad_token_id": pad_id,
    }


def _eagle3_weights(gen, E, L) -> dict:
    """EAGLE-3 head. It predicts the token after the one it is fed; for a bigram-like target that is a
    function of the fed token's embedding, which reaches the layer only through attention. So the
    query/key are constant vectors (from E's constant column) on fast rope frequencies: query heads 0
    and 2 attend to their own position (the fed token: added), heads 1 and 3 to the previous one
    (subtracted, cancelling the embedding carried in the residual: from the target's embeddings via
    fc at the first step, from the head's own output after that). fc also copies the target's
    repetition penalty (aux layer 1), which the head keeps for its later steps: a stale penalty and the
    MLP noise make it close to the target, not equal."""
    import torch

    w = _decoder_layer(gen, "midlayer")
    del w["midlayer.self_attn.q_norm.weight"], w["midlayer.self_attn.k_norm.weight"]  # Llama layer
    half = HEAD_DIM // 2
    # q/k/v read cat([rmsnorm(embedding), hidden_norm(hidden)]): 2 * HIDDEN inputs; neox rope pairs
    # are dims (i, i + half) of a head.
    qw = torch.zeros(HEADS * HEAD_DIM, 2 * HIDDEN)
    kw, vw = torch.zeros(KV_HEADS * HEAD_DIM, 2 * HIDDEN), torch.zeros(KV_HEADS * HEAD_DIM, 2 * HIDDEN)
    freqs = EAGLE_ROPE_THETA ** (-torch.arange(half) / half)
    for h in range(HEADS):
        back = h % 2  # heads 1, 3: score peaks one position back when q = R(-1) k
        qw[h * HEAD_DIM: h * HEAD_DIM + half, 0] = EAGLE_QK * torch.cos(freqs * back)
        qw[h * HEAD_DIM + half: (h + 1) * HEAD_DIM, 0] = -EAGLE_QK * torch.sin(freqs * back)
    for h in range(KV_HEADS):
        kw[h * HEAD_DIM: h * HEAD_DIM + half, 0] = EAGLE_QK
    vw[:, 1: BIGRAM + 1] = torch.eye(BIGRAM)  # KV head h carries bigram dims 1 + 32h .. 32(h + 1)
    ow = torch.zeros(HIDDEN, HEADS * HEAD_DIM)
    for h in range(HEADS):  # query heads 2kv, 2kv + 1 read KV head kv (GQA); write it back, + or -
        kv = h // 2
        ow[1 + kv * HEAD_DIM: 1 + (kv + 1) * HEAD_DIM, h * HEAD_DIM: (h + 1) * HEAD_DIM] = (-1) ** h * torch.eye(HEAD_DIM)
    fc = torch.zeros(HIDDEN, 3 * HIDDEN)  # input: cat(aux 0 = embeddings, aux 1 = after layer 0, aux 2)
    fc[1: BIGRAM + 1, 1: BIGRAM + 1] = torch.eye(BIGRAM)
    fc[HIDDEN - PEN_DIM:, 2 * HIDDEN - PEN_DIM: 2 * HIDDEN] = torch.eye(PEN_DIM)
    w.update({"midlayer.self_attn.q_proj.weight": qw, "midlayer.self_attn.k_proj.weight": kw,
              "midlayer.self_attn.v_proj.weight": vw, "midlayer.self_attn.o_proj.weight": ow,
              "midlayer.hidden_norm.weight": torch.ones(HIDDEN), "fc.weight": fc,
              "norm.weight": torch.ones(HIDDEN), "embed_tokens.weight": E, "lm_head.weight": L})
    return w


def _mtp_weights(gen, M) -> dict:
    """MiMo MTP layer: input_proj reads cat([hidden_layernorm(hidden), token_layernorm(next embedding)]);
    keep the next token's embedding (the bigram predicts from it) plus a faint share of the hidden."""
    import torch

    p = "model.mtp_layers.0"
    w = _decoder_layer(gen, p, qwen2=True)
    _add_penalty_head(w, p, M)  # its window over the shifted tokens is the target's next window
    w.update({f"{p}.token_layernorm.weight": torch.ones(HIDDEN), f"{p}.hidden_layernorm.weight": torch.ones(HIDDEN),
              f"{p}.final_layernorm.weight": torch.ones(HIDDEN),
              f"{p}.input_proj.weight": torch.cat([0.1 * torch.eye(HIDDEN), torch.eye(HIDDEN)], dim=1)})
    return w


def _save(folder: Path, config: dict, weights: dict, tokenizer, eos_id: int, pad_id: int) -> None:
    import torch
    from safetensors.torch import save_file

    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    tensors = {k: v.to(torch.bfloat16).contiguous() for k, v in sorted(weights.items())}
    save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
    if tokenizer is not None:
        tokenizer.save_pretrained(folder)
        gen_cfg = {"eos_token_id": [eos_id, pad_id], "pad_token_id": pad_id, "do_sample": False}
        (folder / "generation_config.json").write_text(json.dumps(gen_cfg, indent=2) + "\n")


def _build(out_dir: Path) -> None:
    import torch

    corpus = _corpus()
    tokenizer = _tokenizer(corpus)
    eos_id, pad_id = tokenizer.convert_tokens_to_ids([EOS, "<|endoftext|>"])
    E, L = _bigram_factors(tokenizer, corpus)
    shared = {"model.embed_tokens.weight": E, "lm_head.weight": L, "model.norm.weight": torch.ones(HIDDEN)}
    gen = torch.Generator().manual_seed(1234)
    M = _penalty_codes(gen, E, L)
    L[eos_id, 0] = EOS_BIAS  # E's column 0 is a constant 1: a bias
    target_layers = {**_decoder_layer(gen, "model.layers.0"), **_decoder_layer(gen, "model.layers.1")}
    _add_penalty_head(target_layers, "model.layers.0", M)

    def cfg(*args):
        return _base_config(*args, eos_id=eos_id, pad_id=pad_id)

    _save(out_dir / "tiny-qwen3", cfg("Qwen3ForCausalLM", "qwen3", 2),
          {**shared, **target_layers}, tokenizer, eos_id, pad_id)
    # The draft is the target's first layer: it lacks only layer 1's perturbation.
    draft_layers = {k: v for k, v in target_layers.items() if k.startswith("model.layers.0.")}
    _save(out_dir / "tiny-qwen3-draft", cfg("Qwen3ForCausalLM", "qwen3", 1),
          {**shared, **draft_layers}, tokenizer, eos_id, pad_id)

    eagle = cfg("LlamaForCausalLMEagle3", "llama", 1)
    eagle.update({
        "draft_vocab_size": VOCAB, "target_hidden_size": HIDDEN, "norm_before_residual": False,
        "rope_parameters": {"rope_type": "default", "rope_theta": EAGLE_ROPE_THETA},
        # Aux layer ids count hidden states, 0 = embeddings; vLLM's default takes only two of a 2-layer
        # target's, and the first request then fails (HTTP 500, CHECK_EQ 256 vs 384).
        "eagle_aux_hidden_state_layer_ids": [0, 1, 2],
        # The target this head was built for, relative to this folder (what a pre-flight compares).
        "verifier": {"name_or_path": "../tiny-qwen3", "architectures": ["Qwen3ForCausalLM"]},
    })
    _save(out_dir / "tiny-eagle3", eagle, _eagle3_weights(gen, E, L), None, eos_id, pad_id)

    mimo = cfg("MiMoForCausalLM", "qwen2", 2)
    mimo["num_nextn_predict_layers"] = 1
    mimo_layers = {**_decoder_layer(gen, "model.layers.0", qwen2=True),
                   **_decoder_layer(gen, "model.layers.1", qwen2=True)}
    _add_penalty_head(mimo_layers, "model.layers.0", M)
    _save(out_dir / "tiny-mimo", mimo, {**shared, **mimo_layers, **_mtp_weights(gen, M)}, tokenizer, eos_id, pad_id)


def _stamp() -> dict:
    """What the built bytes depend on: the recipe, and the stdlib text and libraries it is built from."""
    from importlib.metadata import version

    return {"recipe_version": RECIPE_VERSION, "models": list(NAMES), "python": platform.python_version(),
            "torch": version("torch"), "tokenizers": version("tokenizers")}


def build_all(out_dir: Path, *, force: bool = False) -> dict[str, Path]:
    """Build the tiny models into out_dir (one folder each) unless a stamp of this recipe is there."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    # One builder at a time per folder: a second process waits, then finds the stamp and returns.
    with open(out_dir / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _build_locked(out_dir, force)


def _build_locked(out_dir: Path, force: bool) -> dict[str, Path]:
    paths = {name: out_dir / name for name in NAMES}
    stamp = out_dir / STAMP
    want = _stamp()
    if not force and stamp.is_file() and all(p.is_dir() for p in paths.values()):
        try:
            if json.loads(stamp.read_text()) == want:
                return paths
        except json.JSONDecodeError:
            pass  # a torn stamp: rebuild
    stamp.unlink(missing_ok=True)
    for p in paths.values():
        shutil.rmtree(p, ignore_errors=True)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # no fork warnings; training is tiny
    _build(out_dir)
    stamp.write_text(json.dumps(want, indent=2) + "\n")  # last: a crash mid-build leaves no stamp
    return paths


def _cmd(args: argparse.Namespace) -> int:
    paths = build_all(Path(args.out), force=args.force)
    for name, path in paths.items():
        digest = hashlib.sha256((path / "model.safetensors").read_bytes()).hexdigest()[:12]
        print(f"{name:18} {path}  sha256:{digest}")
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("tiny-models", help="build the tiny local models (model set `tiny`)",
                              description=__doc__.splitlines()[0])
    p.add_argument("--out", default=os.environ.get("SPECSTACK_MODELS", ".specstack/models"),
                   help="models folder (default: $SPECSTACK_MODELS or .specstack/models)")
    p.add_argument("--force", action="store_true", help="rebuild even if the folder has this recipe's stamp")
    p.set_defaults(func=_cmd)
