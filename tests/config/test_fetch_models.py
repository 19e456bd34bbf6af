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

QWEN3_8B = [
    "config.json",
    "generation_config.json",
    "LICENSE",
    "merges.txt",
    "README.md",
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.json",
    ".gitattributes",
    "model.safetensors.index.json",
    *[f"model-0000{i}-of-00005.safetensors" for i in range(1, 6)],
]


def test_a_sharded_safetensors_model_gets_its_index_files_and_every_top_level_file():
    index = [f"model-0000{i}-of-00005.safetensors" for i in range(1, 6)]
    assert fm.select_files(QWEN3_8B, index) == sorted(QWEN3_8B)


def test_only_the_weight_format_vllm_picks_and_never_original_or_pictures():
    files = [
        "config.json",
        "tokenizer.json",
        "pytorch_model.bin",
        "model.safetensors",
        "original/consolidated.pth",
        "original/params.json",
        "figures/plot.png",
        "logo.png",
        "modeling_mimo.py",
        "configuration_mimo.py",
        "chat_template.jinja",
        "flax_model.msgpack",
        "model.gguf",
    ]
    assert fm.select_files(files) == [
        "chat_template.jinja",
        "config.json",
        "configuration_mimo.py",
        "model.safetensors",
        "modeling_mimo.py",
        "tokenizer.json",
    ]


@pytest.mark.parametrize(
    "weights,picked",
    [
        (
            ["pytorch_model-00001-of-00002.bin", "pytorch_model-00002-of-00002.bin"],
            ["pytorch_model-00001-of-00002.bin", "pytorch_model-00002-of-00002.bin"],
        ),
        (["model.pt"], ["model.pt"]),
        ([], []),
    ],
)
def test_without_safetensors_the_next_format_vllm_tries(weights, picked):
    assert fm.select_files(["config.json", *weights]) == sorted(["config.json", *picked])


def test_an_index_naming_missing_files_is_an_error():
    with pytest.raises(fm.FetchError, match="model-00002-of-00002.safetensors"):
        fm.select_files(
            ["config.json", "model-00001-of-00002.safetensors"],
            ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"],
        )


@pytest.mark.parametrize(
    "method,roles",
    [
        ("baseline", ["target"]),
        ("ngram", ["target"]),
        ("suffix", ["target"]),
        ("draft_model", ["target", "speculative"]),
        ("eagle3", ["target", "speculative"]),
        ("mtp", ["target"]),
        ("mtp-baseline", ["target"]),
    ],
)
def test_the_models_are_those_of_the_serve_plan(method, roles):
    plan = methods.build(method, platform="gpu-container")
    refs = fm.model_refs(plan)
    assert [r["role"] for r in refs] == roles
    assert refs[0]["model"] == plan.target and refs[0]["revision"] == plan.flags.get("revision")
    if "speculative" in roles:
        assert refs[1]["model"] == plan.speculative_config["model"]
        assert refs[1]["revision"] == plan.speculative_config.get("revision")


def test_local_folders_need_nothing_and_it_says_so(tmp_path, monkeypatch):
    """Model set tiny: every model is a folder; no download, huggingface_hub is never imported."""
    for name in ("tiny-qwen3", "tiny-eagle3"):
        (tmp_path / name).mkdir()
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)  # an import would raise
    out = io.StringIO()
    plan = methods.build("eagle3", model_set_name="tiny", platform="cpu-container", models_dir=str(tmp_path))
    assert fm.fetch(plan, out=out) == []
    lines = out.getvalue().splitlines()
    assert lines == [
        f"fetch: target {tmp_path}/tiny-qwen3 is a local folder: nothing to download",
        f"fetch: speculative {tmp_path}/tiny-eagle3 is a local folder: nothing to download",
        "fetch: eagle3 (tiny) reads local folders only: no download, the network is not used",
    ]


def test_a_missing_local_folder_is_left_to_the_pre_flight(tmp_path):
    out = io.StringIO()
    plan = methods.build("baseline", model_set_name="tiny", platform="cpu-container", models_dir=str(tmp_path))
    fm.fetch(plan, out=out)
    assert "(not there: pre-flight says what to do)" in out.getvalue()


def test_the_script_as_the_container_runs_it(tmp_path):
    (tmp_path / "tiny-mimo").mkdir()
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "--method", "mtp", "--model-set", "tiny", "--platform", "cpu-container"],
        capture_output=True,
        text=True,
        timeout=60,
        env={
            "PATH": "/usr/bin:/bin",
            "SPECSTACK_MODELS": str(tmp_path),
            "SPECSTACK_SPEC_OVERRIDE": '{"num_speculative_tokens": 2}',
        },
    )
    assert out.returncode == 0, out.stderr
    assert f"fetch: target {tmp_path}/tiny-mimo is a local folder: nothing to download" in out.stdout


def test_the_script_names_a_bad_method(tmp_path):
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "--method", "Ngram"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert out.returncode == 2 and "case-sensitive: use 'ngram'" in out.stderr


# --- against a stand-in of the hub, with the real huggingface_hub -----------------------------------------------

COMMIT = "a" * 40
HUB_FILES = {
    "config.json": b'{"model_type": "qwen3"}',
    "tokenizer_config.json": b'{"chat_template": "{{ x }}"}',
    "model.safetensors": b"w" * 100,
    "pytorch_model.bin": b"b" * 50,
    "original/consolidated.pth": b"o",
    "README.md": b"card",
    "figures/plot.png": b"p",
}
SERVED = ["README.md", "config.json", "model.safetensors", "tokenizer_config.json"]
SERVED_BYTES = f"{sum(len(HUB_FILES[f]) for f in SERVED)} B"


@pytest.fixture()
def hub():
    from .hub_standin import Hub

    h = Hub("org/tiny", HUB_FILES, commit=COMMIT)
    yield h
    h.close()


def _services(tmp_path, pinned: bool) -> Path:
    """services/ with a model set naming the stand-in's repository (pinned to its commit, or not)."""
    import shutil

    services = tmp_path / "services"
    shutil.copytree(REPO / "services", services, ignore=shutil.ignore_patterns("__pycache__"))
    extra = '\n[model_sets.hubtest]\ntarget = "org/tiny"\n'
    if pinned:
        extra += f'\n[model_sets.hubtest.revisions]\ntarget = "{COMMIT}"\n'
    (services / "methods.toml").write_text((services / "methods.toml").read_text() + extra)
    return services


def _fetch(services: Path, endpoint: str, hf_home: Path, token: str = "") -> subprocess.CompletedProcess:
    """The script as make runs it in the server container: HF_TOKEN_PATH is the compose secret's file."""
    secret = hf_home.parent / "hf_token"
    secret.write_text(token)
    env = {
        "PATH": "/usr/bin:/bin",
        "HF_ENDPOINT": endpoint,
        "HF_HOME": str(hf_home),
        "HF_TOKEN_PATH": str(secret),
        "HF_HUB_DISABLE_XET": "1",
        "HF_HUB_DISABLE_TELEMETRY": "1",
    }
    return subprocess.run(
        [
            sys.executable,
            str(services / "fetch_models.py"),
            "--method",
            "baseline",
            "--model-set",
            "hubtest",
            "--platform",
            "gpu-container",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def test_a_pinned_model_is_fetched_at_its_commit_with_only_the_files_vllm_reads(hub, tmp_path):
    from huggingface_hub import try_to_load_from_cache

    hf_home = tmp_path / "hf"
    out = _fetch(_services(tmp_path, pinned=True), hub.url, hf_home, token="hf_secretTokenFromTheSecretFile")
    assert out.returncode == 0, out.stderr
    assert f"fetch: target org/tiny @ {COMMIT} (pinned): {len(SERVED)} files, {SERVED_BYTES}\n" in out.stdout
    assert "fetch: target org/tiny is in the cache: " in out.stdout
    assert f"Fetching {len(SERVED)} files" in out.stderr  # huggingface_hub's progress bar
    assert hub.downloads() == SERVED  # no .bin beside the safetensors, no original/, no pictures
    assert all(
        f"/revision/{COMMIT}" in p or "/resolve/" not in p or f"/resolve/{COMMIT}/" in p for _, p in hub.requests
    )
    # where the pre-flight and vLLM look: the cache at that commit
    found = try_to_load_from_cache("org/tiny", "tokenizer_config.json", revision=COMMIT, cache_dir=hf_home / "hub")
    assert isinstance(found, str) and Path(found).read_bytes() == HUB_FILES["tokenizer_config.json"]
    assert hub.authorization == {"Bearer hf_secretTokenFromTheSecretFile"}
    assert "hf_secretTokenFromTheSecretFile" not in out.stdout + out.stderr


def test_a_second_fetch_finds_everything_cached_and_downloads_nothing(hub, tmp_path):
    services, hf_home = _services(tmp_path, pinned=True), tmp_path / "hf"
    assert _fetch(services, hub.url, hf_home).returncode == 0
    hub.requests.clear()
    out = _fetch(services, hub.url, hf_home)
    assert out.returncode == 0, out.stderr
    assert f"{len(SERVED)} files, {SERVED_BYTES}, {SERVED_BYTES} already in the cache" in out.stdout
    assert hub.downloads() == []


def test_an_unpinned_model_says_so_and_gets_mains_commit(hub, tmp_path):
    from huggingface_hub import try_to_load_from_cache

    hf_home = tmp_path / "hf"
    out = _fetch(_services(tmp_path, pinned=False), hub.url, hf_home)
    assert out.returncode == 0, out.stderr
    assert f"(NOT PINNED: main is {COMMIT} today" in out.stdout
    # main -> that commit in the cache (refs/main), as vLLM's lookups without a revision expect
    assert isinstance(try_to_load_from_cache("org/tiny", "config.json", cache_dir=hf_home / "hub"), str)
    assert hub.authorization == {None}  # an empty secret is no token


@pytest.mark.parametrize(
    "status,code,message",
    [
        (
            401,
            "GatedRepo",
            "org/tiny is gated or needs a token: accept its licence on https://huggingface.co/org/tiny "
            "and export HF_TOKEN=hf_...",
        ),
        (404, "RepoNotFound", "no repository org/tiny on the Hugging Face Hub (or it is private)"),
        (404, "RevisionNotFound", f"org/tiny has no revision '{COMMIT}': fix `revision` in services/methods.toml"),
    ],
)
def test_a_model_that_cannot_be_fetched_stops_with_the_reason(tmp_path, status, code, message):
    from .hub_standin import Hub

    hub = Hub("org/tiny", HUB_FILES, commit=COMMIT, errors={"api": (status, code)})
    try:
        out = _fetch(_services(tmp_path, pinned=True), hub.url, tmp_path / "hf")
    finally:
        hub.close()
    assert out.returncode == 2 and f"fetch: {message}" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr


def test_no_network_stops_with_the_reason(tmp_path):
    from ..support import free_port

    out = _fetch(_services(tmp_path, pinned=True), f"http://127.0.0.1:{free_port()}", tmp_path / "hf")
    assert out.returncode == 2 and "fetch: fetching org/tiny failed (" in out.stderr
    assert "check the network to huggingface.co (or HF_ENDPOINT)" in out.stderr and "Traceback" not in out.stderr
