"""services/fetch_models.py: the models of a method's plan go into the Hugging Face cache before its server
starts; the files are those vLLM 0.32.0 reads; local folders need nothing and it says so."""
from __future__ import annotations

import importlib.util
import io
import subprocess
import sys
from pathlib import Path

import pytest

from specstack.config import methods

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "services" / "fetch_models.py"


def _module():
    spec = importlib.util.spec_from_file_location("specstack_fetch_models", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


fm = _module()

QWEN3_8B = ["config.json", "generation_config.json", "LICENSE", "merges.txt", "README.md", "tokenizer.json",
            "tokenizer_config.json", "vocab.json", ".gitattributes", "model.safetensors.index.json",
            *[f"model-0000{i}-of-00005.safetensors" for i in range(1, 6)]]


def test_a_sharded_safetensors_model_gets_its_index_files_and_every_top_level_file():
    index = [f"model-0000{i}-of-00005.safetensors" for i in range(1, 6)]
    assert fm.select_files(QWEN3_8B, index) == sorted(QWEN3_8B)


def test_only_the_weight_format_vllm_picks_and_never_original_or_pictures():
    files = ["config.json", "tokenizer.json", "pytorch_model.bin", "model.safetensors", "original/consolidated.pth",
             "original/params.json", "figures/plot.png", "logo.png", "modeling_mimo.py", "configuration_mimo.py",
             "chat_template.jinja", "flax_model.msgpack", "model.gguf"]
    assert fm.select_files(files) == ["chat_template.jinja", "config.json", "configuration_mimo.py",
                                      "model.safetensors", "modeling_mimo.py", "tokenizer.json"]


@pytest.mark.parametrize("weights,picked", [
    (["pytorch_model-00001-of-00002.bin", "pytorch_model-00002-of-00002.bin"],
     ["pytorch_model-00001-of-00002.bin", "pytorch_model-00002-of-00002.bin"]),
    (["model.pt"], ["model.pt"]),
    ([], []),
])
def test_without_safetensors_the_next_format_vllm_tries(weights, picked):
    assert fm.select_files(["config.json", *weights]) == sorted(["config.json", *picked])


def test_an_index_naming_missing_files_is_an_error():
    with pytest.raises(fm.FetchError, match="model-00002-of-00002.safetensors"):
        fm.select_files(["config.json", "model-00001-of-00002.safetensors"],
                        ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"])


@pytest.mark.parametrize("method,roles", [
    ("baseline", ["target"]), ("ngram", ["target"]), ("suffix", ["target"]),
    ("draft_model", ["target", "speculative"]), ("eagle3", ["target", "speculative"]),
    ("mtp", ["target"]), ("mtp-baseline", ["target"]),
])
def test_the_models_are_those_of_the_serve_plan(method, roles):
    plan = methods.build(method, platform="gpu-container")
    refs = fm.model_refs(plan)
    assert [r["role"] for r in refs] == roles
    assert refs[0]["model"] == plan["target"] and refs[0]["revision"] == plan["flags"].get("revision")
    if "speculative" in roles:
        assert refs[1]["model"] == plan["speculative_config"]["model"]
        assert refs[1]["revision"] == plan["speculative_config"].get("revision")


def test_local_folders_need_nothing_and_it_says_so(tmp_path, monkeypatch):
    """Model set tiny: every model is a folder; no download, huggingface_hub is never imported."""
    for name in ("tiny-qwen3", "tiny-eagle3"):
        (tmp_path / name).mkdir()
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)  # an import would raise
    out = io.StringIO()
    plan = methods.build("eagle3", model_set_name="tiny", platform="cpu-container", models_dir=str(tmp_path))
    assert fm.fetch(plan, out=out) == []
    lines = out.getvalue().splitlines()
    assert lines == [f"fetch: target {tmp_path}/tiny-qwen3 is a local folder: nothing to download",
                     f"fetch: speculative {tmp_path}/tiny-eagle3 is a local folder: nothing to download",
                     "fetch: eagle3 (tiny) reads local folders only: no download, the network is not used"]


def test_a_missing_local_folder_is_left_to_the_pre_flight(tmp_path):
    out = io.StringIO()
    plan = methods.build("baseline", model_set_name="tiny", platform="cpu-container", models_dir=str(tmp_path))
    fm.fetch(plan, out=out)
    assert "(not there: pre-flight says what to do)" in out.getvalue()


def test_the_script_as_the_container_runs_it(tmp_path):
    (tmp_path / "tiny-mimo").mkdir()
    out = subprocess.run([sys.executable, str(SCRIPT), "--method", "mtp", "--model-set", "tiny",
                          "--platform", "cpu-container"], capture_output=True, text=True, timeout=60,
                         env={"PATH": "/usr/bin:/bin", "SPECSTACK_MODELS": str(tmp_path),
                              "SPECSTACK_SPEC_OVERRIDE": '{"num_speculative_tokens": 2}'})
    assert out.returncode == 0, out.stderr
    assert f"fetch: target {tmp_path}/tiny-mimo is a local folder: nothing to download" in out.stdout


def test_the_script_names_a_bad_method(tmp_path):
    out = subprocess.run([sys.executable, str(SCRIPT), "--method", "Ngram"], capture_output=True, text=True,
                         timeout=60, env={"PATH": "/usr/bin:/bin"})
    assert out.returncode == 2 and "case-sensitive: use 'ngram'" in out.stderr
