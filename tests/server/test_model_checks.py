"""Artifact checks read config.json only and name the fix."""

import json

import pytest

from specstack.config import methods
from specstack.server import model_checks

pytestmark = pytest.mark.unit


def folder(tmp_path, name, template="{{ messages[0]['content'] }}", **config):
    """A model folder: config.json, and (unless template is False) a tokenizer_config.json with that template."""
    path = tmp_path / name
    path.mkdir()
    (path / "config.json").write_text(json.dumps(config))
    if template is not False:
        (path / "tokenizer_config.json").write_text(json.dumps({"chat_template": template} if template else {}))
    return path


def plan(method, tmp_path, spec_override=None):
    return methods.build(method, model_set_name="tiny", models_dir=str(tmp_path), spec_override=spec_override)


def test_good_tiny_layout_passes(tmp_path):
    folder(tmp_path, "tiny-qwen3", vocab_size=2048)
    folder(tmp_path, "tiny-qwen3-draft", vocab_size=2048)
    folder(tmp_path, "tiny-eagle3", verifier={"name_or_path": "../tiny-qwen3"})
    folder(tmp_path, "tiny-mimo", num_nextn_predict_layers=1)
    for m in ("baseline", "ngram", "draft_model", "eagle3", "suffix", "mtp", "mtp-baseline"):
        assert model_checks.check(plan(m, tmp_path)) == ([], []), m


def test_missing_draft_and_target(tmp_path):
    problems, _ = model_checks.check(plan("draft_model", tmp_path))
    assert any("target" in p and "no config.json" in p for p in problems)
    assert any("draft_model model" in p and "methods.toml" in p for p in problems)


def test_vocab_mismatch(tmp_path):
    folder(tmp_path, "tiny-qwen3", vocab_size=2048)
    folder(tmp_path, "tiny-qwen3-draft", vocab_size=4096)
    problems, _ = model_checks.check(plan("draft_model", tmp_path))
    assert problems == [
        "draft vocab_size 4096 != target vocab_size 2048; vLLM needs equal vocabularies: "
        "pick a draft of the target's family"
    ]


def test_eagle3_head_for_another_target(tmp_path):
    folder(tmp_path, "tiny-qwen3", vocab_size=2048)
    folder(tmp_path, "tiny-eagle3", speculators_config={"verifier": {"name_or_path": "meta-llama/Llama-3.1-8B"}})
    problems, _ = model_checks.check(plan("eagle3", tmp_path))
    assert len(problems) == 1 and "trained for meta-llama/Llama-3.1-8B, not for the target" in problems[0]


def test_mtp_without_mtp_layers(tmp_path):
    folder(tmp_path, "tiny-mimo", vocab_size=2048)
    problems, _ = model_checks.check(plan("mtp", tmp_path))
    assert len(problems) == 1 and "ships no MTP layers" in problems[0] and "mtp-baseline" in problems[0]


def test_hub_ids_not_downloaded_are_skipped_not_failed(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    problems, skipped = model_checks.check(methods.build("eagle3"))
    assert problems == [] and any("not downloaded" in s for s in skipped)


# --- chat template: the acceptance phase talks to /v1/chat/completions ----------------------------------------


@pytest.mark.parametrize(
    "name,text",
    [
        ("chat_template.jinja", "{{ messages[0]['content'] }}"),
        ("chat_template.json", json.dumps({"chat_template": "{{ messages[0]['content'] }}"})),
    ],
)
def test_a_template_in_its_own_file_counts(tmp_path, name, text):
    path = folder(tmp_path, "tiny-qwen3", template=None, model_type="qwen3")
    (path / name).write_text(text)
    assert model_checks.check(plan("baseline", tmp_path)) == ([], [])
    assert model_checks.chat_template_source(path) == name


def test_a_folder_without_tokenizer_files_is_not_checked_but_said(tmp_path):
    folder(tmp_path, "tiny-qwen3", template=False)
    problems, skipped = model_checks.check(plan("baseline", tmp_path))
    assert problems == [] and skipped == [
        f"chat template of {tmp_path}/tiny-qwen3: not checked (no tokenizer files in {tmp_path}/tiny-qwen3)"
    ]
