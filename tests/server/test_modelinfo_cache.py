"""vLLM's model-class cache filled beside a held server's imports (server/modelinfo_cache.py): where it is, which
architectures a server needs, which are missing; and, on the real vLLM 0.32.0, that what the process writes is
what vLLM's own registry then reads instead of starting its inspection subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from specstack.server import modelinfo_cache


def model(folder: Path, config: object) -> str:
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(config))
    return str(folder)


@pytest.mark.unit
def test_architectures_are_the_local_models_own_once_each(tmp_path):
    target = model(tmp_path / "target", {"architectures": ["LlamaForCausalLM"]})
    drafter = model(tmp_path / "drafter", {"architectures": ["Eagle3LlamaForCausalLM", "LlamaForCausalLM"]})
    odd = model(tmp_path / "odd", ["not", "a", "config"])
    bare = model(tmp_path / "bare", {"model_type": "llama"})
    found = modelinfo_cache.architectures([target, drafter, odd, bare, "HuggingFaceTB/SmolLM2-135M", ""])
    assert found == ["LlamaForCausalLM", "Eagle3LlamaForCausalLM"]


@pytest.mark.unit
def test_missing_are_those_with_no_cache_file(tmp_path):
    folder = tmp_path / "modelinfos"
    assert modelinfo_cache.missing(["LlamaForCausalLM"], folder) == ["LlamaForCausalLM"]  # no folder yet
    folder.mkdir()
    (folder / "vllm-model_executor-models-llama-LlamaForCausalLM.json").write_text("{}")
    archs = ["LlamaForCausalLM", "Eagle3LlamaForCausalLM"]
    assert modelinfo_cache.missing(archs, folder) == ["Eagle3LlamaForCausalLM"]


@pytest.mark.unit
def test_nothing_is_started_when_the_cache_has_them(tmp_path, monkeypatch):
    folder = tmp_path / "cache" / "modelinfos"
    folder.mkdir(parents=True)
    (folder / "vllm-model_executor-models-llama-LlamaForCausalLM.json").write_text("{}")
    monkeypatch.setenv("VLLM_CACHE_ROOT", str(tmp_path / "cache"))
    target = model(tmp_path / "target", {"architectures": ["LlamaForCausalLM"]})
    assert modelinfo_cache.start([target, str(tmp_path / "absent")]) is None


@pytest.mark.integration
def test_what_it_writes_is_what_vllm_reads_instead_of_its_subprocess(models_dir, tmp_path):
    [arch] = modelinfo_cache.architectures([str(Path(models_dir) / "tiny-qwen3")])
    env = {**os.environ, "VLLM_CACHE_ROOT": str(tmp_path / "root")}
    done = subprocess.run(
        [sys.executable, "-m", "specstack.server.modelinfo_cache", arch, "NoSuchArchForCausalLM"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"{modelinfo_cache.FILLED} {arch} in " in done.stdout, done.stdout
    written = [p.name for p in (tmp_path / "root" / "modelinfos").iterdir()]
    assert len(written) == 1 and written[0].endswith(f"-{arch}.json"), written
    # vLLM's own registry, in a fresh process on that root, with its inspection subprocess made to fail: a hit
    probe = textwrap.dedent(
        f"""
        from vllm.model_executor.models import registry
        def refuse(fn):
            raise AssertionError("vLLM started its inspection subprocess: the cache missed")
        registry._run_in_subprocess = refuse
        info = registry.ModelRegistry.models["{arch}"].inspect_model_cls()
        print("hit", info.architecture)
        """
    )
    read = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=300)
    assert read.returncode == 0 and f"hit {arch}" in read.stdout, read.stderr[-3000:]
