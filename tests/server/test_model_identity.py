"""Checkpoint identity: a local folder by a fingerprint of its files, a hub id by its cached snapshot's commit."""

from __future__ import annotations

import shutil

import pytest

from specstack.server import model_identity

pytestmark = pytest.mark.unit


def _folder(path):
    path.mkdir(parents=True)
    (path / "config.json").write_text('{"hidden_size": 8}')
    (path / "model.safetensors").write_bytes(bytes(range(256)) * 100)
    return path


def test_a_folder_fingerprint_follows_content_not_place(tmp_path):
    a = _folder(tmp_path / "a")
    fp = model_identity.folder_fingerprint(a)
    assert fp["files"] == 2 and not fp["sampled"]
    shutil.copytree(a, tmp_path / "elsewhere")
    assert model_identity.folder_fingerprint(tmp_path / "elsewhere") == fp
    (a / ".cache").mkdir()
    (a / ".cache" / "lock").write_text("x")  # a hub download's bookkeeping is not the model
    assert model_identity.folder_fingerprint(a) == fp
    data = bytearray((a / "model.safetensors").read_bytes())
    data[12345] ^= 1
    (a / "model.safetensors").write_bytes(bytes(data))
    assert model_identity.folder_fingerprint(a)["sha256"] != fp["sha256"]


def test_large_files_are_sampled_and_the_record_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(model_identity, "FULL_HASH_BYTES", 1000)
    monkeypatch.setattr(model_identity, "_EDGE", 100)
    a = _folder(tmp_path / "a")
    fp = model_identity.folder_fingerprint(a)
    assert fp["sampled"]
    data = bytearray((a / "model.safetensors").read_bytes())
    data[-1] ^= 1  # within the last "MiB"
    (a / "model.safetensors").write_bytes(bytes(data))
    assert model_identity.folder_fingerprint(a)["sha256"] != fp["sha256"]


def test_a_hub_model_is_known_by_its_cached_snapshot_commit(tmp_path, monkeypatch):
    commit = "b968826d9c46dd6066d109eabc6255188de91218"
    repo = tmp_path / "hub" / "models--Qwen--Qwen3-8B"
    (repo / "snapshots" / commit).mkdir(parents=True)
    (repo / "snapshots" / commit / "config.json").write_text("{}")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    assert model_identity.identity("Qwen/Qwen3-8B") == {
        "model": "Qwen/Qwen3-8B",
        "kind": "hub",
        "revision": commit,
        "pinned": None,
    }
    assert model_identity.identity("Qwen/Qwen3-0.6B")["revision"] is None  # not cached: unknown


def test_a_plan_names_every_checkpoint_its_server_reads(tmp_path):
    from specstack.runs.options import Options, plan_for

    for name in ("tiny-qwen3", "tiny-qwen3-draft"):
        _folder(tmp_path / name)
    plan = plan_for(
        Options(method="draft_model", run_id="x", model_set="tiny", platform="cpu-native", models_dir=str(tmp_path))
    )
    ids = model_identity.of_plan(plan)
    assert set(ids) == {"target", "speculative"}
    assert ids["target"]["fingerprint"] == ids["speculative"]["fingerprint"]  # same bytes, same fingerprint
    assert model_identity.of_plan(
        plan_for(Options(method="ngram", run_id="x", model_set="tiny", platform="cpu-native", models_dir=str(tmp_path)))
    ).keys() == {"target"}
