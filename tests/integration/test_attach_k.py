"""Attaching to an ngram server started with another K than methods.toml's, on real vLLM 0.32.0 (CPU, tiny
models): the server's K is read from /metrics before measuring (the per-position counter's positions) and
from the answers; a run asking for another K, or for plain decode, fails naming both unless --trust-server,
which records the server's K. One vLLM server start in this file."""

from __future__ import annotations

import pytest
import requests

from specstack.config import methods
from specstack.results.reader import MethodData
from specstack.server import observed

from .attach import only_bundle, run_cli
from .faults import ManagedServer

pytestmark = pytest.mark.integration


def asked_k(models_dir) -> int:
    plan = methods.build("ngram", model_set_name="tiny", platform="cpu-native", models_dir=str(models_dir))
    assert plan.speculative_config is not None
    return int(plan.speculative_config["num_speculative_tokens"])


def server_k(models_dir) -> int:
    """A K other than methods.toml's, small enough for the tiny model's prompts."""
    return 2 if asked_k(models_dir) != 2 else 3


@pytest.fixture(scope="module")
def ngram(models_dir, tmp_path_factory):
    server = ManagedServer(
        models_dir,
        tmp_path_factory.mktemp("ngram-k-server"),
        method="ngram",
        spec_override={"num_speculative_tokens": server_k(models_dir)},
    )
    yield server
    server.stop()


def test_the_per_position_counter_has_k_positions_before_any_request(ngram, models_dir):
    page = requests.get(f"{ngram.url}/metrics", timeout=10).text
    facts = observed.spec_from_metrics(page)
    assert facts["spec_decode_counters"] and facts["num_speculative_tokens"] == server_k(models_dir)


def test_another_k_fails_before_measuring_naming_both(ngram, models_dir, tmp_path, capsys):
    want, have = asked_k(models_dir), server_k(models_dir)
    result = run_cli(capsys, models_dir, tmp_path, "k", "ngram", "--url", ngram.url)
    assert result.code == 1 and "Traceback" not in result.err
    assert f"asked for ngram with num_speculative_tokens={want} (services/methods.toml)" in result.text
    assert f"the server at {ngram.url} drafts K={have}" in result.text
    assert f"pass --k {have} to ask for the server's K" in result.text and "--trust-server" in result.text
    bundle, s = only_bundle(tmp_path, "k", "ngram")
    assert bundle.name.startswith("ngram.failed-") and s["windows"] == []
    assert s["server"]["observed"]["metrics"]["num_speculative_tokens"] == have
    assert s["asked_for"]["speculative_config"]["num_speculative_tokens"] == want


def test_trust_server_records_the_servers_k(ngram, models_dir, tmp_path, capsys):
    want, have = asked_k(models_dir), server_k(models_dir)
    result = run_cli(capsys, models_dir, tmp_path, "kt", "ngram", "--url", ngram.url, "--trust-server")
    assert result.code == 0, result.err
    bundle, s = only_bundle(tmp_path, "kt", "ngram")
    assert s["status"] == "ok" and s["crosscheck"]["ok"] and s["crosscheck"]["checks"] > 0
    assert s["speculative_config"] == {"num_speculative_tokens": have}
    assert MethodData("ngram", bundle, s).k == have  # what the report and compare read
    assert s["asked_for"]["speculative_config"]["num_speculative_tokens"] == want
    assert s["server_contradictions"]["trusted"] and f"drafts K={have}" in s["server_contradictions"]["found"][0]
    answers = s["server"]["observed"]["responses"]
    assert answers["num_speculative_tokens"] == [have] and answers["with_spec_metrics"] == answers["requests"]
    assert answers["max_drafts_per_step"] is not None and answers["drafts_per_step_within_k"]
    assert len(s["tasks"]["code"]["histogram"]) == have + 1


def test_asking_for_the_servers_k_agrees(ngram, models_dir, tmp_path, capsys):
    have = server_k(models_dir)
    result = run_cli(capsys, models_dir, tmp_path, "kk", "ngram", "--url", ngram.url, "--k", have)
    assert result.code == 0, result.err
    _, s = only_bundle(tmp_path, "kk", "ngram")
    assert s["status"] == "ok" and s["server_contradictions"] is None
    assert s["speculative_config"] == {"num_speculative_tokens": have}


def test_the_baseline_against_a_spec_server_fails_naming_both(ngram, models_dir, tmp_path, capsys):
    result = run_cli(capsys, models_dir, tmp_path, "b", "baseline", "--url", ngram.url)
    assert result.code == 1
    assert "asked for baseline (plain decoding, services/methods.toml)" in result.text
    assert f"runs speculative decoding with K={server_k(models_dir)}" in result.text
    _, s = only_bundle(tmp_path, "b", "baseline")
    assert s["windows"] == [] and s["error_type"] == "ServerContradiction"
