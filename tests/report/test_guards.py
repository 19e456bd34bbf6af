"""The report's prompt guards (report/guards.py): a doubled BOS and random-token prompts, each on a built bundle
whose acceptance records carry the prompts as vLLM served them, and what a reader of report.md sees."""

from __future__ import annotations

import json

import pytest

from specstack.config.workloads import default_prompt
from specstack.report import build, guards, render, sections, tables
from tests.bundles import write_method

pytestmark = pytest.mark.unit

N = 16
# vllm bench's random dataset: token ids drawn uniformly, decoded with SmolLM2's tokenizer
RANDOM_TEXT = (
    " diameterMarc bodieschanged reputborolash Hale disinfectant APA tomorrow departmentwauatorsbg "
    "scanner bullies cacti authored refugee Johannesburgunesandez unusreader record nameidence "
    "Isolation axiau"
)


def _bundle(tmp_path, task: str, prompts: list[str], ids: list[list[int]] | None, server: dict | None = None):
    """A baseline and an ngram method on one task whose acceptance records hold `prompts` as the user message
    and `ids` as the served prompt's token ids (None: a bundle from before vLLM returned them)."""
    run_dir = tmp_path / "run"
    run_dir.mkdir(parents=True)
    texts = {task: {f"r{i}": ("an answer", "stop") for i in range(len(prompts))}}
    for name, baseline in (("baseline", None), ("ngram", "baseline")):
        d = write_method(
            run_dir,
            name,
            baseline=baseline,
            k=None if baseline is None else 4,
            cells={(task, 1): [(10.0, 100.0, {})]},
            texts=texts,
            server=server,
        )
        path = d / "acceptance" / f"{task}.jsonl"
        lines = []
        for i, line in enumerate(path.read_text().splitlines()):
            rec = json.loads(line)
            rec["request"]["messages"][0]["content"] = prompts[i]
            if ids is not None:
                rec["response"]["prompt_token_ids"] = ids[i]
            lines.append(json.dumps(rec))
        path.write_text("\n".join(lines) + "\n")
    return run_dir


def _report(run_dir) -> tuple[build.Report, str]:
    rep = build.build(run_dir, with_plots=False)
    tables.table_bytes("prompt_guards", rep.guards)  # the tidy table takes the rows as they are
    return rep, render.render_markdown(sections.blocks(rep))


def _chat() -> list[str]:
    return [default_prompt("chat", i) for i in range(N)]


def test_a_doubled_bos_is_marked_on_the_task_with_its_fix(tmp_path):
    rep, md = _report(_bundle(tmp_path, "chat", _chat(), [[1, 1, 9690, 198, 2683]] * N))
    assert (
        "⚠ **Doubled BOS.** baseline: 16 of 16 prompts begin with two BOS tokens (id 1, first token repeated); "
        "ngram: 16 of 16 prompts" in md
    )
    assert "costs about 5 % of acceptance" in md and "add_special_tokens" in md
    assert md.index("## Task: chat") < md.index("Doubled BOS")  # under the task's heading
    # and named in the Verdict section, before any figure
    assert md.index("**Prompts that bias acceptance**") < md.index("## Task: chat")
    assert "- chat: ⚠ doubled BOS in the prompts (about -5 % acceptance; let one side add it)" in md
    assert "Random-token prompts" not in md  # the chat prompts are English prose
    assert {r["doubled_bos"] for r in rep.guards} == {N}


def test_a_single_bos_and_an_old_bundle_are_not_marked(tmp_path):
    _, md = _report(_bundle(tmp_path / "single", "chat", _chat(), [[1, 9690, 198, 1, 1]] * N))
    assert "Doubled BOS" not in md
    rep, md = _report(_bundle(tmp_path / "old", "chat", _chat(), None))  # no prompt ids recorded: not judged
    assert "Doubled BOS" not in md and {r["prompts_with_ids"] for r in rep.guards} == {0}


def test_the_tokenizers_bos_id_and_a_prompt_text_that_starts_with_the_bos(tmp_path):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    folder = tmp_path / "tok"
    tok = Tokenizer(models.WordLevel({"[UNK]": 0, "<s>": 1, "hi": 2}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", bos_token="<s>").save_pretrained(folder)
    server = {"root_model": str(folder)}
    # a repeated first token that is not the BOS is no doubled BOS when the tokenizer names its BOS
    _, md = _report(_bundle(tmp_path / "other", "chat", _chat(), [[7, 7, 2]] * N, server))
    assert "Doubled BOS" not in md
    _, md = _report(_bundle(tmp_path / "bos", "chat", _chat(), [[1, 1, 2]] * N, server))
    assert "16 of 16 prompts begin with two BOS tokens (id 1, BOS id 1)" in md
    prompts = ["<s>" + p for p in _chat()]
    _, md = _report(_bundle(tmp_path / "text", "chat", prompts, [[1, 2]] * N, server))
    assert "baseline: 16 of 16 prompt texts start with the BOS string" in md


def test_random_token_prompts_are_marked_by_their_text(tmp_path):
    rep, md = _report(_bundle(tmp_path, "mine", [RANDOM_TEXT] * N, None))
    assert "⚠ **Random-token prompts** (0.0 % of 304 words are common English words; English prose: 20–50 %)" in md
    assert "says nothing about real text" in md
    assert "- mine: ⚠ random-token prompts (acceptance says nothing about real text)" in md
    assert {r["random_prompts"] for r in rep.guards} == {True}


def test_random_prompts_by_the_datasets_recorded_name(tmp_path):
    run_dir = _bundle(tmp_path, "random", _chat(), None)
    (run_dir / "inputs").mkdir()
    (run_dir / "inputs" / "random.dataset.json").write_text(json.dumps({"dataset": "random"}))
    _, md = _report(run_dir)
    assert "⚠ **Random-token prompts** (dataset 'random';" in md


def test_real_prompts_are_not_random(tmp_path):
    _, md = _report(_bundle(tmp_path, "code", [default_prompt("code", i) for i in range(N)], None))
    assert "Random-token prompts" not in md and "Prompts that bias acceptance" not in md


def test_the_pure_guards():
    assert guards.doubled_bos([[5, 5, 1], [5, 1], None, []], None) == {
        "checked": 2,
        "doubled": 1,
        "token": 5,
        "basis": "first token repeated",
    }
    assert guards.doubled_bos([[5, 5, 1]], 2)["doubled"] == 0
    assert guards.bos_in_text(["<s>hi", " <s> hi", "hi <s>", None], "<s>") == 2
    assert guards.bos_in_text(["<s>hi"], None) == 0
    few = guards.random_prompts(None, ["tiny"])
    assert few["random"] is None and few["basis"] == "1 words, too few to judge"
    assert guards.random_prompts("random", [])["random"] is True


def test_the_console_heading_marks_the_task(tmp_path):
    from rich.console import Console

    from specstack.report import console_table

    run_dir = _bundle(tmp_path, "chat", [RANDOM_TEXT] * N, [[1, 1, 2]] * N)
    console = Console(record=True, width=400)
    console_table.print_run(run_dir, console)
    heading = next(line for line in console.export_text().splitlines() if line.startswith("task: chat"))
    assert heading.endswith(
        "⚠ doubled BOS in the prompts (about -5 % acceptance; let one side add it) "
        "⚠ random-token prompts (acceptance says nothing about real text)"
    )
    run_dir = _bundle(tmp_path / "fine", "chat", _chat(), [[1, 2]] * N)
    console = Console(record=True, width=400)
    console_table.print_run(run_dir, console)
    assert "⚠ doubled BOS" not in console.export_text() and "random-token" not in console.export_text()
