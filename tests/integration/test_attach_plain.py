"""Attaching to a plain-decode server someone else started (`--url`), on real vLLM 0.32.0 (CPU, tiny models):
the summary says what the server revealed and marks the rest unknown; a speculative method asked of it fails
before measuring, naming both facts, unless --trust-server. One vLLM server start in this file."""

from __future__ import annotations

import pytest
import requests

from specstack.config import methods
from specstack.server import observed
from specstack.server.provenance import client_vllm_version

from .attach import only_bundle, run_cli
from .faults import ManagedServer

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def plain(models_dir, tmp_path_factory):
    server = ManagedServer(models_dir, tmp_path_factory.mktemp("plain-server"), method="baseline")
    yield server
    server.stop()


def plan(method: str, models_dir) -> methods.ServePlan:
    return methods.build(method, model_set_name="tiny", platform="cpu-native", models_dir=str(models_dir))


def test_a_plain_server_has_no_spec_decode_family(plain):
    """The rule's basis, on the real engine: no vllm:spec_decode_* family at all (not zero-valued ones)."""
    page = requests.get(f"{plain.url}/metrics", timeout=10).text
    assert "vllm:generation_tokens" in page and "vllm:spec_decode" not in page


def test_url_alone_attaches_and_records_only_what_was_observed(plain, models_dir, tmp_path, capsys):
    result = run_cli(capsys, models_dir, tmp_path, "plain", "baseline", "--url", plain.url)  # no --runtime
    assert result.code == 0, result.err
    bundle, s = only_bundle(tmp_path, "plain", "baseline")
    assert bundle.name == "baseline" and s["status"] == "ok"
    server, asked = s["server"], plan("baseline", models_dir)
    assert server["runtime"] == "url" and server["url"] == plain.url
    # not known about a server someone else started: recorded as unknown, never filled in from methods.toml
    assert server["argv"] is None and server["env"] is None and server["target"] is None
    assert "argv" in server["unknown"] and "platform" not in server
    seen = server["observed"]
    assert seen["models"]["id"] == "spec-demo" and seen["models"]["root"] == plain.plan.target
    assert seen["models"]["max_model_len"] == int(plain.plan.flags["max-model-len"])
    assert seen["vllm_version"] == server["vllm_version"] == client_vllm_version().split("+")[0]  # 0.32.0+cpu
    assert seen["metrics"]["read"] and seen["metrics"]["spec_decode_counters"] is False
    assert seen["responses"]["with_spec_metrics"] == 0 and seen["responses"]["requests"] > 0
    assert s["speculative_config"] is None and s["server_contradictions"] is None
    # the plan, labelled as asked for
    assert s["asked_for"]["argv"] == asked.argv and s["asked_for"]["speculative_config"] is None
    assert s["asked_for"]["platform"] == "cpu-native"


def test_eagle3_against_a_plain_server_fails_before_measuring_naming_both(plain, models_dir, tmp_path, capsys):
    result = run_cli(capsys, models_dir, tmp_path, "e3", "eagle3", "--url", plain.url)
    asked_k = plan("eagle3", models_dir).speculative_config["num_speculative_tokens"]
    assert result.code == 1 and "Traceback" not in result.err
    assert f"asked for eagle3 (speculative, num_speculative_tokens={asked_k}, services/methods.toml)" in result.text
    assert (
        f"the server at {plain.url} exposes no vllm:spec_decode_* counters on /metrics: it runs plain decoding"
        in result.text
    )
    assert "--method baseline" in result.text and "--trust-server" in result.text
    bundle, s = only_bundle(tmp_path, "e3", "eagle3")
    assert bundle.name.startswith("eagle3.failed-") and s["error_type"] == "ServerContradiction"
    assert s["windows"] == [], "a contradicted server was measured"
    assert not (bundle / "acceptance").exists() and not (bundle / "warmup.jsonl").exists()
    assert s["server"]["observed"]["metrics"]["spec_decode_counters"] is False
    assert s["asked_for"]["speculative_config"]["method"] == "eagle3"
    assert s["server_contradictions"]["trusted"] is False


def test_trust_server_measures_what_the_server_runs_and_records_the_contradiction(plain, models_dir, tmp_path, capsys):
    result = run_cli(capsys, models_dir, tmp_path, "e3t", "eagle3", "--url", plain.url, "--trust-server")
    assert result.code == 0, result.err
    _, s = only_bundle(tmp_path, "e3t", "eagle3")
    assert s["status"] == "ok" and s["crosscheck"]["ok"]
    found = s["server_contradictions"]
    assert found["trusted"] and not found["after_measuring"] and "plain decoding" in found["found"][0]
    # its figures are plain decode's, and the summary says so: no speculative config, no drafts
    assert s["speculative_config"] is None and s["speculative_config_source"].startswith("observed")
    assert s["tasks"]["code"]["num_draft_tokens"] is None and s["tasks"]["code"]["requests"] > 0
    assert s["asked_for"]["speculative_config"]["method"] == "eagle3"
    assert observed.speculative(s["server"]["observed"]) is False
