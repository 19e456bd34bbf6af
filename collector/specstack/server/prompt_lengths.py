"""Every prompt of a run fits the target's context with the output asked of it: checked before any server starts.

vLLM 0.32.0 answers a prompt longer than its max model length with HTTP 400 (in the perf phase that surfaced only
as "1 of 4 bench requests failed"), and silently cuts the output of a prompt whose tokens plus the output asked
exceed it (entrypoints/serve/utils/api_utils.py get_max_tokens): figures of other lengths than asked. So each
prompt is counted as the server will count it, with the target's tokenizer (transformers, from the local folder
or the Hugging Face cache; never downloaded: not on disk, not checked):
  - an acceptance row is a chat request: the chat template (the server's --chat-template when the plan gives one)
    over one user message, with the chat_template_kwargs the collector sends; plus the row's max_tokens. Its
    sampled phases send the same prompts with the same max_tokens;
  - a perf row: `vllm bench serve` templates the prompt with the tokenizer's own template and sends the text to
    /v1/completions (vllm/benchmarks/datasets/datasets.py, CustomDataset.sample); plus --perf-output-len.
Turn-2 chats hold the baseline's answers, known only during the run: not counted here.

The max length is the plan's max-model-len (methods.toml's [common] sets one), else the smallest of the config
keys vLLM derives it from (transformers_utils/model_arch_config_convertor.py); a config with RoPE scaling, which
vLLM multiplies in, is left unchecked rather than refused on a wrong limit.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING, Any

from specstack.config.workloads import Task, read_jsonl
from specstack.server import model_checks

if TYPE_CHECKING:
    from specstack.config.methods import ServePlan

# vLLM 0.32.0's keys for a model's maximum length, the smallest present wins (model_arch_config_convertor.py)
MAX_LEN_KEYS = (
    "max_position_embeddings",
    "n_positions",
    "max_seq_len",
    "seq_length",
    "model_max_length",
    "max_target_positions",
    "max_sequence_length",
    "max_seq_length",
    "seq_len",
)
SHOWN = 3  # offending rows named in the message; the rest counted


def max_model_len(plan: ServePlan) -> int | None:
    """The server's max model length as vLLM will set it, or None when it cannot be told offline."""
    given = plan.flags.get("max-model-len")
    if given:
        return int(given)
    config, _ = model_checks.config_of(plan.target, plan.flags.get("revision"))
    config = (config or {}).get("text_config") or config or {}
    if config.get("rope_scaling") or config.get("rope_parameters"):
        return None
    found = [int(config[k]) for k in MAX_LEN_KEYS if isinstance(config.get(k), int)]
    return min(found) if found else None


@functools.lru_cache(maxsize=4)
def _tokenizer(folder: str):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(folder)


class Counter:
    """Prompt tokens as the server started from `plan` counts them (None: the tokenizer is not on disk).
    `chat_kwargs`: the chat_template_kwargs the collector and bench send (measure/chat.py)."""

    def __init__(self, plan: ServePlan, chat_kwargs: dict):
        flags = plan.flags
        folder, _ = model_checks.tokenizer_folder(
            flags.get("tokenizer") or plan.target, flags.get("tokenizer-revision") or flags.get("revision")
        )
        self.tokenizer = _tokenizer(str(folder)) if folder is not None else None
        self.kwargs = chat_kwargs
        given = flags.get("chat-template")  # a file, or one of vLLM's own by name: resolved as vLLM does
        if given:
            from vllm.renderers.chat_utils import load_chat_template

            self.server_template = load_chat_template(str(given))
        else:
            self.server_template = None

    @property
    def _loaded(self) -> Any:
        """The tokenizer (transformers'): chat() and bench() count only for a Counter that found one on disk."""
        assert self.tokenizer is not None, "the tokenizer is not on disk"
        return self.tokenizer

    def _templated(self, prompt: str, template: str | None) -> str:
        return self._loaded.apply_chat_template(
            [{"role": "user", "content": prompt}],
            chat_template=template,
            add_generation_prompt=True,
            tokenize=False,
            **self.kwargs,
        )

    def chat(self, prompt: str) -> int:
        """A /v1/chat/completions request of one user message (vLLM encodes the rendered chat without adding
        special tokens)."""
        text = self._templated(prompt, self.server_template)
        return len(self._loaded(text, add_special_tokens=False, verbose=False).input_ids)

    def bench(self, prompt: str) -> int:
        """A perf row as `vllm bench serve` sends it: templated with the tokenizer's own template (bench knows
        no --chat-template), as text to /v1/completions, which adds the tokenizer's special tokens."""
        tokenizer = self._loaded
        text = self._templated(prompt, None) if tokenizer.chat_template else prompt
        return len(tokenizer(text, verbose=False).input_ids)


def problems(
    plan: ServePlan, tasks: dict[str, Task], *, perf_output_len: int, chat_kwargs: dict, perf: bool = True
) -> list[str]:
    """One message per task whose prompts do not fit: acceptance rows, and perf rows unless `perf` is False."""
    limit = max_model_len(plan)
    count = Counter(plan, chat_kwargs)
    if limit is None or count.tokenizer is None:
        return []
    found = []
    for name, task in tasks.items():
        over = []
        for n, row in enumerate(task.acceptance, start=1):
            tokens = count.chat(row["prompt"])
            if tokens + row["max_tokens"] > limit:
                over.append(
                    f"{task.acceptance_path}:{n} (id {row['id']}): {tokens} prompt tokens + max_tokens "
                    f"{row['max_tokens']} = {tokens + row['max_tokens']}"
                )
        for n, row in enumerate(read_jsonl(task.perf_path) if perf else [], start=1):
            tokens = count.bench(row["prompt"])
            if tokens + perf_output_len > limit:
                over.append(
                    f"{task.perf_path}:{n}: {tokens} prompt tokens + --perf-output-len {perf_output_len} = "
                    f"{tokens + perf_output_len}"
                )
        if over:
            more = f" (and {len(over) - SHOWN} more)" if len(over) > SHOWN else ""
            found.append(
                f"task {name}: {'; '.join(over[:SHOWN])}{more}: over the max model length {limit} of "
                f"{Path(plan.target).name} (vLLM would refuse the prompt or cut its output short). "
                "Shorten or drop those prompts, lower the output length (--acceptance-max-tokens, a row's "
                "max_tokens, --perf-output-len), or raise max-model-len in services/methods.toml"
            )
    return found
