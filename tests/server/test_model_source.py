"""Where a native server's models would come from (server/model_source.py), with huggingface_hub's real cache
lookup and client: an empty or filled cache folder, HF_HUB_OFFLINE, a hub endpoint that refuses connections and
one that answers 404 (a local HTTP server). No network is used."""

from __future__ import annotations

import http.server

import pytest

from specstack.config import methods
from specstack.config.methods import ServePlan
from specstack.server import model_source
from tests.support import HttpStandIn, free_port

pytestmark = pytest.mark.unit

HUB_ID = "Qwen/Qwen3-8B"


@pytest.fixture
def hub_env(tmp_path, monkeypatch):
    """An empty hub cache and no offline flag; tests set what they need."""
    cache = tmp_path / "hub"
    cache.mkdir()
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    return cache


def put_in_cache(cache, model: str, files: list[str], commit: str | None = None) -> None:
    """The layout huggingface_hub writes: models--org--name/refs/main -> snapshots/<commit>/<files>."""
    repo = cache / ("models--" + model.replace("/", "--"))
    commit = commit or "0123456789abcdef0123456789abcdef01234567"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    snapshot = repo / "snapshots" / commit
    snapshot.mkdir(parents=True)
    for name in files:
        (snapshot / name).write_text("{}")


def default_plan(method: str = "eagle3") -> ServePlan:
    return methods.build(method, model_set_name="default", platform="gpu-native")


def test_offline_without_a_cached_snapshot_names_the_fix(hub_env, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    found = model_source.problems(default_plan())
    plan = default_plan()
    assert [p.split(" is neither")[0] for p in found] == [
        f"target {plan.target}",
        f"eagle3 model {plan.speculative_config['model']}",
    ]
    for problem in found:
        assert "\n" not in problem
        assert f"in the Hugging Face cache ({hub_env})" in problem and "HF_HUB_OFFLINE=1 forbids downloads" in problem
        assert "--model-set tiny" in problem and "HF_TOKEN" in problem


def test_a_cached_snapshot_with_weights_is_enough_offline(hub_env, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    plan = default_plan("baseline")
    put_in_cache(hub_env, plan.target, ["config.json", "model.safetensors"], commit=plan.flags["revision"])
    assert model_source.problems(plan) == []


def test_a_cached_snapshot_of_another_commit_than_the_pinned_one_is_not(hub_env, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    plan = default_plan("baseline")
    assert len(plan.flags["revision"]) == 40  # methods.toml pins the default target
    put_in_cache(hub_env, plan.target, ["config.json", "model.safetensors"])  # refs/main: another commit
    assert [p.split(" is neither")[0] for p in model_source.problems(plan)] == [f"target {plan.target}"]


def test_a_cached_config_without_weights_is_not(hub_env, monkeypatch):
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    plan = default_plan("baseline")
    put_in_cache(hub_env, plan.target, ["config.json"])
    (problem,) = model_source.problems(plan)
    assert "TRANSFORMERS_OFFLINE=1 forbids downloads" in problem


def test_local_folders_are_left_to_the_artifact_checks(hub_env, monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    plan = methods.build("draft_model", model_set_name="tiny", platform="cpu-native", models_dir=str(tmp_path))
    assert model_source.problems(plan) == []


def test_a_hub_that_refuses_connections(hub_env, monkeypatch):
    port = free_port()  # nobody listens there
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    (problem,) = model_source.problems(default_plan("baseline"))
    assert f"http://127.0.0.1:{port} cannot be reached (ConnectionError)" in problem and "--model-set tiny" in problem


class Hub(HttpStandIn):
    """A local stand-in for the hub's API answering every request with one status."""

    def __init__(self, status: int):
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(
                    b'{"id": "Qwen/Qwen3-8B", "sha": "0123456789abcdef0123456789abcdef01234567"}'
                    if status == 200
                    else b'{"error": "nope"}'
                )

        super().__init__(Handler)


@pytest.mark.parametrize("status, expect", [(200, None), (404, "404"), (500, "HTTP 500")])
def test_what_the_hub_answers(hub_env, monkeypatch, status, expect):
    hub = Hub(status)
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    try:
        found = model_source.problems(default_plan("baseline"))
    finally:
        hub.close()
    if expect is None:
        assert found == []
    else:
        (problem,) = found
        assert expect in problem and hub.url in problem, problem
