"""Validity guards on a task's prompts (issue #41 point 9): prompts whose acceptance says less than it seems.

- doubled BOS: the served prompt begins with two BOS tokens (a chat template that inserts the BOS and a tokenizer
  or a prompt text that adds another). vLLM's own acceptance test warns it costs about 5 % of acceptance. Read
  from the prompt token ids vLLM returns with each acceptance answer (`return_token_ids`); the BOS id from the
  target's tokenizer where it loads, else the first token repeated.
- random-token prompts (vllm bench's random dataset and the like): acceptance on them says nothing about real
  text. Read from the task's dataset record (its name) or, failing that, from how few of the prompts' words are
  the most common English words.

One pure function per guard; `guard_rows` applies them per method × task, `guard_notes` renders a task's."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from specstack.report.acceptance import acceptance_records
from specstack.report.equality import Tokenizers, tokenizer_path
from specstack.report.format import pct
from specstack.report.render import Block
from specstack.report.rows import GuardRow
from specstack.results import layout
from specstack.results.reader import RunData

if TYPE_CHECKING:
    from specstack.report.contents import Report

COLUMNS = [
    "method",
    "label",
    "task",
    "requests",
    "prompts_with_ids",
    "doubled_bos",
    "bos_id",
    "bos_basis",
    "bos_in_text",
    "random_prompts",
    "random_basis",
    "common_word_share",
    "words",
]

RANDOM_NAMES = frozenset({"random", "random-mm", "random_mm"})  # vllm bench's random datasets, by name
# the most common English function words: 20-50 % of the words of English prose, about 0.1 % of random tokens'
COMMON_WORDS = frozenset(
    {
        "the",
        "of",
        "and",
        "to",
        "in",
        "is",
        "that",
        "for",
        "it",
        "with",
        "as",
        "on",
        "be",
        "this",
        "are",
        "by",
        "or",
        "not",
        "an",
        "you",
        "from",
        "at",
        "was",
        "have",
        "what",
        "how",
        "your",
        "can",
        "if",
        "which",
    }
)
MIN_WORDS = 100  # fewer words than this: the statistic is not read
RANDOM_SHARE = 0.02  # under this share of common words: random tokens (or no English prose at all)


def doubled_bos(prompt_ids: list[list[int] | None], bos_id: int | None) -> dict[str, Any]:
    """How many prompts begin with two BOS tokens. bos_id None (no tokenizer, or one without a BOS): a prompt
    whose first token repeats (a chat template's first token is its BOS or start marker). Prompts without ids
    are not counted (`checked`)."""
    known = [ids for ids in prompt_ids if ids]
    if bos_id is None:
        doubled = [ids for ids in known if len(ids) > 1 and ids[0] == ids[1]]
    else:
        doubled = [ids for ids in known if ids[:2] == [bos_id, bos_id]]
    return {
        "checked": len(known),
        "doubled": len(doubled),
        "token": doubled[0][0] if doubled else bos_id,
        "basis": "first token repeated" if bos_id is None else f"BOS id {bos_id}",
    }


def bos_in_text(texts: list[str | None], bos: str | None) -> int:
    """How many prompt texts start with the BOS string itself (a template's BOS comes before them: two BOS)."""
    return sum(1 for t in texts if bos and t and t.lstrip().startswith(bos))


def random_prompts(dataset: str | None, texts: list[str | None]) -> dict[str, Any]:
    """Whether the prompts are random tokens: by the dataset's recorded name, else by the share of common English
    words among their words (None: too few words to say)."""
    words = [w for t in texts if t for w in re.findall(r"[a-z]+", t.lower())]
    share = sum(w in COMMON_WORDS for w in words) / len(words) if words else None
    if dataset and dataset.lower() in RANDOM_NAMES:
        return {"random": True, "basis": f"dataset {dataset!r}", "share": share, "words": len(words)}
    if share is None or len(words) < MIN_WORDS:
        return {"random": None, "basis": f"{len(words)} words, too few to judge", "share": share, "words": len(words)}
    return {
        "random": share < RANDOM_SHARE,
        "basis": f"{pct(share)} of {len(words)} words are common English words",
        "share": share,
        "words": len(words),
    }


def dataset_name(run: RunData, task: str) -> str | None:
    """The task's dataset as its record names it (inputs/<task>.dataset.json); None without one."""
    path = run.run_dir / layout.INPUTS_DIR / layout.dataset_record(task)
    try:
        return json.loads(path.read_text()).get("dataset") if path.exists() else None
    except (OSError, ValueError, AttributeError):
        return None


def _user_text(messages: list[dict[str, Any]] | None) -> str | None:
    """The first user message's text (the prompt as the task gave it)."""
    for m in messages or []:
        if m.get("role") == "user" and isinstance(m.get("content"), str):
            text: str = m["content"]
            return text
    return None


def guard_rows(run: RunData, tokenizers: Tokenizers | None = None, tokenizer: str | None = None) -> list[GuardRow]:
    """One row per method × task with acceptance records: both guards' verdicts and what they rest on."""
    tokenizers = tokenizers or Tokenizers()
    rows: list[GuardRow] = []
    for md in run.methods.values():
        tok, _ = tokenizers.get(tokenizer or tokenizer_path(md))
        bos_id = getattr(tok, "bos_token_id", None) if tok is not None else None
        bos = getattr(tok, "bos_token", None) if tok is not None else None
        for task in run.tasks:
            records = [r for r in acceptance_records(md, task) if not r["error"]]
            if not records:
                continue
            texts = [_user_text(r["messages"]) for r in records]
            bos_check = doubled_bos([r["prompt_token_ids"] for r in records], bos_id)
            rand = random_prompts(dataset_name(run, task) or (task if task.lower() in RANDOM_NAMES else None), texts)
            rows.append(
                {
                    "method": md.name,
                    "label": md.display_name,
                    "task": task,
                    "requests": len(records),
                    "prompts_with_ids": bos_check["checked"],
                    "doubled_bos": bos_check["doubled"],
                    "bos_id": bos_check["token"],
                    "bos_basis": bos_check["basis"],
                    "bos_in_text": bos_in_text(texts, bos),
                    "random_prompts": rand["random"],
                    "random_basis": rand["basis"],
                    "common_word_share": rand["share"],
                    "words": rand["words"],
                }
            )
    return rows


class NoTokenizers(Tokenizers):
    """Never a tokenizer (the console's marks: no transformers load at a run's end); the BOS rule falls back to
    the first token repeated."""

    def get(self, path: str | None) -> tuple[None, str]:
        return None, "not loaded"


def guard_marks(rows: list[GuardRow], task: str) -> str:
    """The task's guards that fired as a short mark for the console's task heading ("" when none did)."""
    mine = [r for r in rows if r["task"] == task]
    marks = []
    if any(r["doubled_bos"] or r["bos_in_text"] for r in mine):
        marks.append("⚠ doubled BOS in the prompts (about -5 % acceptance; let one side add it)")
    if any(r["random_prompts"] for r in mine):
        marks.append("⚠ random-token prompts (acceptance says nothing about real text)")
    return "".join(f" {m}" for m in marks)


def guard_notes(rep: Report, task: str) -> list[Block]:
    """The task's guards that fired, one paragraph each (nothing when none did)."""
    rows = [r for r in rep.guards if r["task"] == task]
    out: list[Block] = []
    doubled = [r for r in rows if r["doubled_bos"] or r["bos_in_text"]]
    if doubled:
        parts = [
            f"{r['label']}: {r['doubled_bos']} of {r['prompts_with_ids']} prompts begin with two BOS tokens "
            f"(id {r['bos_id']}, {r['bos_basis']})"
            if r["doubled_bos"]
            else f"{r['label']}: {r['bos_in_text']} of {r['requests']} prompt texts start with the BOS string"
            for r in doubled
        ]
        out.append(
            (
                "p",
                "⚠ **Doubled BOS.** " + "; ".join(parts) + ". A repeated BOS costs about 5 % of "
                "acceptance (vLLM's own acceptance test), so this task's acceptance reads low. Fix: let one "
                "side add the BOS: strip it from the prompt text, or drop the tokenizer's (add_special_tokens "
                "false) when the chat template already inserts it.",
            )
        )
    rand = next((r for r in rows if r["random_prompts"]), None)
    if rand:
        out.append(
            (
                "p",
                f"⚠ **Random-token prompts** ({rand['random_basis']}; English prose: 20–50 %). "
                "Acceptance on random tokens says nothing about real text: a drafter has nothing to "
                "predict from. Measure acceptance on a real dataset (--dataset) before reading it; prompts in "
                "no English at all read as random by the word share too.",
            )
        )
    return out
