"""What a server reveals about itself (server/observed.py): /metrics pages rendered by prometheus_client the way
vLLM 0.32.0's SpecDecodingProm registers its counters (one child per engine, the per-position counter with a
child per position 0..K-1 at start-up), answers' metrics.speculative_decoding as RequestSpecDecodeMetrics
writes them, and a real HTTP server for observe(). The real engine's pages: tests/integration/test_attach*.py."""

from __future__ import annotations

import http.server
import json

import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest

from specstack.config import metric_names as m
from specstack.config.methods import ServePlan
from specstack.server import observed as obs
from tests.support import HttpStandIn, serve_plan

pytestmark = pytest.mark.unit


def vllm_page(k: int | None, engines: int = 1) -> str:
    """A /metrics page as vLLM renders it: engine counters always, spec counters only with a speculative config."""
    reg = CollectorRegistry()
    labels = ["model_name", "engine"]
    Counter("vllm:generation_tokens", "g", labels, registry=reg).labels("spec-demo", "0").inc(5)
    Gauge("vllm:num_requests_running", "r", labels, registry=reg).labels("spec-demo", "0").set(0)
    if k is not None:
        for name in (
            "vllm:spec_decode_num_drafts",
            "vllm:spec_decode_num_draft_tokens",
            "vllm:spec_decode_num_accepted_tokens",
        ):
            counter = Counter(name, "d", labels, registry=reg)
            for e in range(engines):
                counter.labels("spec-demo", str(e))
        per_pos = Counter(m.SPEC_ACCEPTED_PER_POS, "p", labels + ["position"], registry=reg)
        for e in range(engines):
            for pos in range(k):
                per_pos.labels("spec-demo", str(e), str(pos))
    return generate_latest(reg).decode()


@pytest.mark.parametrize("k", [1, 2, 4, 16])
def test_k_is_the_number_of_positions_before_any_request(k):
    facts = obs.spec_from_metrics(vllm_page(k))
    assert facts["spec_decode_counters"] is True
    assert facts["num_speculative_tokens"] == k
    assert facts["positions"] == [str(p) for p in range(k)]
    assert set(facts["families"]) == set(m.SPEC_COUNTERS)


def test_positions_are_counted_once_over_engines():
    assert obs.spec_from_metrics(vllm_page(3, engines=2))["num_speculative_tokens"] == 3


def test_a_plain_server_has_no_spec_family():
    facts = obs.spec_from_metrics(vllm_page(None))
    assert facts == {"spec_decode_counters": False, "families": [], "num_speculative_tokens": None, "positions": []}


def test_spec_families_without_the_per_position_counter_leave_k_unknown():
    page = "\n".join(line for line in vllm_page(3).splitlines() if "per_pos" not in line)
    facts = obs.spec_from_metrics(page)
    assert facts["spec_decode_counters"] is True and facts["num_speculative_tokens"] is None


def response_metrics(k: int, steps: list[tuple[int, int]]) -> dict:
    """metrics.speculative_decoding of one answer at the detailed level: (drafted, accepted) per step."""
    hist = [0] * (k + 1)
    for _, accepted in steps:
        hist[accepted] += 1
    return {
        "num_spec_tokens": k,
        "acceptance_histogram": hist,
        "num_spec_steps": len(steps),
        "num_draft_tokens": sum(d for d, _ in steps),
        "num_accepted_draft_tokens": sum(a for _, a in steps),
        "per_step_drafted": [d for d, _ in steps],
        "per_step_accepted": [a for _, a in steps],
    }


def test_answers_reveal_k_and_drafts_per_step():
    facts = obs.spec_from_responses([response_metrics(4, [(4, 2), (3, 3)]), response_metrics(4, [(2, 0)]), None])
    assert facts == {
        "requests": 3,
        "with_spec_metrics": 2,
        "num_speculative_tokens": [4],
        "max_drafts_per_step": 4,
        "drafts_per_step_within_k": True,
    }
    summary_level = {k: v for k, v in response_metrics(2, [(2, 1)]).items() if not k.startswith("per_step")}
    facts = obs.spec_from_responses([summary_level])
    assert facts["num_speculative_tokens"] == [2] and facts["max_drafts_per_step"] is None
    assert obs.spec_from_responses([None, None])["with_spec_metrics"] == 0


def observed(k: int | None, *, read: bool = True) -> dict:
    metrics = {"read": read, "spec_decode_counters": None, "num_speculative_tokens": None}
    if read:
        metrics.update(obs.spec_from_metrics(vllm_page(k)))
    return {"models": {}, "metrics": metrics}


EAGLE3 = {"method": "eagle3", "model": "/m/tiny-eagle3", "num_speculative_tokens": 3}
NGRAM4 = {"method": "ngram", "num_speculative_tokens": 4}


def test_contradictions_name_both_facts():
    url = "http://127.0.0.1:1234"
    (msg,) = obs.contradictions("eagle3", EAGLE3, observed(None), url)
    assert "asked for eagle3 (speculative, num_speculative_tokens=3" in msg and "no vllm:spec_decode_*" in msg
    assert "plain decoding" in msg and url in msg
    (msg,) = obs.contradictions("baseline", None, observed(2), url)
    assert "asked for baseline (plain decoding" in msg and "runs speculative decoding with K=2" in msg
    (msg,) = obs.contradictions("ngram", NGRAM4, observed(2), url, override=False)
    assert "num_speculative_tokens=4" in msg and "drafts K=2" in msg
    (msg,) = obs.contradictions("ngram", {**NGRAM4, "num_speculative_tokens": 3}, observed(2), url, override=True)
    assert "with --k/--spec-override" in msg and "num_speculative_tokens=3" in msg


def test_agreement_and_unknown_contradict_nothing():
    assert obs.contradictions("ngram", NGRAM4, observed(4), "u") == []
    assert obs.contradictions("baseline", None, observed(None), "u") == []
    assert obs.contradictions("ngram", NGRAM4, observed(None, read=False), "u") == []  # /metrics unreadable


def test_answers_stand_in_when_metrics_say_nothing():
    seen = observed(None, read=False)
    seen["responses"] = obs.spec_from_responses([response_metrics(2, [(2, 1)])])
    assert obs.speculative(seen) is True and obs.observed_k(seen) == 2
    (msg,) = obs.contradictions("ngram", NGRAM4, seen, "u")
    assert "drafts K=2" in msg


def test_the_fix_names_the_way_out():
    assert "pass --k 2" in obs.fix_for("ngram", NGRAM4, observed(2))
    assert "--method baseline" in obs.fix_for("eagle3", EAGLE3, observed(None))
    for fix in (obs.fix_for("ngram", NGRAM4, observed(2)), obs.fix_for("baseline", None, observed(2))):
        assert "--trust-server" in fix


class Endpoints(HttpStandIn):
    """A real HTTP server answering /version and /metrics (404 for what is not given)."""

    def __init__(self, pages: dict[str, tuple[int, str]]):
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                status, body = pages.get(self.path, (404, "not found"))
                self.send_response(status)
                self.end_headers()
                self.wfile.write(body.encode())

        super().__init__(Handler)


MODELS = [
    {"id": "spec-demo", "object": "model", "root": "/m/tiny-qwen3", "parent": None, "max_model_len": 4096},
    {"id": "lora-x", "root": "/m/lora", "parent": "spec-demo"},
]


def test_observe_reads_the_endpoints():
    server = Endpoints({"/version": (200, json.dumps({"version": "0.32.0"})), "/metrics": (200, vllm_page(3))})
    try:
        seen = obs.observe(server.url, "spec-demo", MODELS)
    finally:
        server.close()
    assert seen["models"] == {
        "id": "spec-demo",
        "root": "/m/tiny-qwen3",
        "max_model_len": 4096,
        "parent": None,
        "other_ids": ["lora-x"],
    }
    assert seen["vllm_version"] == "0.32.0"
    assert seen["metrics"]["read"] and seen["metrics"]["num_speculative_tokens"] == 3


@pytest.mark.parametrize("page", [None, "# a gateway's own metrics\nrequests_total 3\n"])
def test_an_unreadable_metrics_page_leaves_spec_decoding_unknown(page):
    server = Endpoints({} if page is None else {"/metrics": (200, page)})
    try:
        seen = obs.observe(server.url, "spec-demo", MODELS)
    finally:
        server.close()
    assert seen["vllm_version"] is None
    assert seen["metrics"]["read"] is False and seen["metrics"]["spec_decode_counters"] is None
    assert seen["metrics"]["error"]
    assert obs.speculative(seen) is None


def plan(method: str, spec: dict | None, **flags) -> ServePlan:
    return serve_plan(
        method=method,
        speculative_config=spec,
        flags={"served-model-name": "spec-demo", "max-model-len": 4096, **flags},
    )


def with_models(seen: dict, *, served: str = "spec-demo", max_model_len: int = 4096) -> dict:
    seen["models"] = {
        "id": served if served == "spec-demo" else None,
        "root": "/m/tiny-qwen3",
        "max_model_len": max_model_len,
        "parent": None,
        "other_ids": [] if served == "spec-demo" else [served],
    }
    return seen


def test_a_started_server_must_agree_with_its_own_plan():
    """The native runtime: every revealed fact is checked against the plan, and a contradiction is named."""
    url = "http://127.0.0.1:8000"
    assert obs.plan_contradictions(plan("ngram", NGRAM4), with_models(observed(4)), url) == []
    assert obs.plan_contradictions(plan("baseline", None), with_models(observed(None)), url) == []
    (msg,) = obs.plan_contradictions(plan("baseline", None), with_models(observed(4)), url)
    assert "runs speculative decoding with K=4" in msg
    (msg,) = obs.plan_contradictions(plan("ngram", NGRAM4), with_models(observed(4), max_model_len=2048), url)
    assert msg == f"asked for max-model-len 4096, but the server at {url} reports max_model_len 2048 on /v1/models"
    (msg,) = obs.plan_contradictions(plan("ngram", NGRAM4), with_models(observed(4), served="other"), url)
    assert "does not list the served model name 'spec-demo'" in msg and "['other']" in msg
