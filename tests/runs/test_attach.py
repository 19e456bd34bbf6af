"""The url runtime's control flow around what a server reveals, against a real HTTP server that answers vLLM's
endpoints (/health, /v1/models, /version, /metrics; pages as tests/server/test_observed.py renders them): a
contradiction fails the run before any window, the summary keeps observed facts and the plan apart. The same on
the real engine: tests/integration/test_attach_plain.py, test_attach_k.py."""

from __future__ import annotations

import http.server
import json

import pytest

from specstack.runs.method_run import run_method
from specstack.runs.options import Options
from specstack.server.provenance import HelpHash
from tests.server.test_observed import vllm_page
from tests.support import HttpStandIn

pytestmark = pytest.mark.unit


class FakeEndpoints(HttpStandIn):
    """What an attached server answers; any chat request is counted (none must come before the check)."""

    def __init__(self, k: int | None):
        pages = {
            "/health": "",
            "/version": json.dumps({"version": "0.32.0"}),
            "/metrics": vllm_page(k),
            "/v1/models": json.dumps(
                {
                    "object": "list",
                    "data": [
                        {"id": "spec-demo", "object": "model", "root": "/somewhere/tiny-qwen3", "max_model_len": 2048}
                    ],
                }
            ),
        }
        self.posts = 0
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                body = pages.get(self.path)
                self.send_response(200 if body is not None else 404)
                self.end_headers()
                self.wfile.write((body or "").encode())

            def do_POST(self):
                outer.posts += 1
                self.send_response(500)
                self.end_headers()

        super().__init__(Handler)


@pytest.fixture
def server(request):
    s = FakeEndpoints(request.param)
    yield s
    s.close()


def options(tmp_path, url: str, method: str, **kw) -> Options:
    return Options(
        method=method,
        run_id="r",
        results_dir=tmp_path,
        runtime="url",
        url=url,
        model_set="tiny",
        platform="cpu-native",
        models_dir=str(tmp_path / "models"),
        tasks=("code",),
        num_prompts=2,
        acceptance_max_tokens=8,
        perf_output_len=8,
        warmup_requests=1,
        skip_bench=True,
        ready_timeout=10,
        **kw,
    )


@pytest.mark.parametrize(
    "server, method, expect",
    [
        (None, "eagle3", "exposes no vllm:spec_decode_* counters"),
        (2, "ngram", "drafts K=2"),
        (4, "baseline", "runs speculative decoding with K=4"),
    ],
    indirect=["server"],
)
def test_a_contradicting_server_fails_before_any_window(server, tmp_path, method, expect):
    summary, published = run_method(options(tmp_path, server.url, method))
    assert summary["status"] == "failed" and summary["error_type"] == "ServerContradiction"
    assert expect in summary["error"] and "--trust-server" in summary["error"]
    assert summary["windows"] == [] and server.posts == 0, "the server was measured"
    assert published.name.startswith(f"{method}.failed-")
    assert not (published / "acceptance").exists() and not (published / "warmup.jsonl").exists()
    assert summary["server"]["argv"] is None and summary["asked_for"]["method"] == method
    assert summary["server"]["observed"]["models"]["root"] == "/somewhere/tiny-qwen3"
    assert summary["server"]["observed"]["models"]["max_model_len"] == 2048


@pytest.mark.parametrize("server", [2], indirect=True)
def test_trust_server_goes_on_with_the_servers_k(server, tmp_path, monkeypatch):
    monkeypatch.setattr(HelpHash, "result", lambda self, timeout=120: self.cancel() or {"sha256": None})  # 10 s
    summary, _ = run_method(options(tmp_path, server.url, "ngram", trust_server=True))
    assert summary["server_contradictions"]["trusted"] is True
    assert summary["speculative_config"] == {"num_speculative_tokens": 2}
    assert summary["asked_for"]["speculative_config"]["num_speculative_tokens"] != 2
    assert server.posts > 0  # it went on to measure (this stand-in answers 500, so the run fails there)
    assert "attached server's flags are unknown" in summary["provenance"]["help_all_of"]
    assert summary.get("error_type") != "ServerContradiction" and "contradict" not in (summary["error"] or "")
