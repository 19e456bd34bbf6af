"""The engine facts read from a server's start-up log (server/provenance.py log_facts): the model runner
as vLLM 0.32.0 states it, or says nothing about it."""

import pytest

from specstack.server import provenance

pytestmark = pytest.mark.unit

KV = (
    "(EngineCore pid=1) INFO 11-30 17:24:51 [kv_cache_utils.py:2327] CPU KV cache size: 2,097,152 tokens, "
    "Maximum concurrency for 4,096 tokens per request: 512.00x\n"
)


def test_v2_only_when_the_worker_says_so():
    log = "(Worker pid=2) INFO [gpu_worker.py:518] Using V2 Model Runner\n" + KV
    assert provenance.log_facts(log)["model_runner"] == "V2"


def test_fallback_line_means_v1():
    log = (
        "(APIServer pid=1) WARNING [vllm.py:733] Model Runner V2 does not yet support speculative method "
        "'suffix'; using the V1 model runner instead.\n"
    )
    assert provenance.log_facts(log)["model_runner"] == "V1"


def test_pinned_v1_logs_no_runner_line_and_still_reads_v1():
    # VLLM_USE_V2_MODEL_RUNNER=0: vLLM logs neither line; an engine that got to its KV cache ran V1.
    facts = provenance.log_facts(KV)
    assert facts["model_runner"] == "V1" and facts["kv_cache_tokens"] == 2_097_152


def test_a_log_that_never_reached_the_engine_says_nothing():
    assert provenance.log_facts("(APIServer pid=1) INFO vllm serve ...\n")["model_runner"] is None


def test_each_fact_says_whether_the_engine_stated_it_or_it_was_inferred_or_echoed():
    """Issue 29 point 7: the runner pinned to V1 is inferred (vLLM logs nothing for it), a V2 or a fall-back line
    is observed, async scheduling read from vLLM's echo of its argv is only what was asked."""
    echo = "(APIServer pid=1) INFO [utils.py:1] non-default args: {'model': 'm', 'async_scheduling': False}\n"
    facts = provenance.log_facts(echo + KV)
    ev = facts["evidence"]
    assert ev["model_runner"]["basis"] == "inferred" and "without 'Using V2 Model Runner'" in ev["model_runner"]["why"]
    assert ev["model_runner"]["line"] == KV.strip()
    assert facts["async_scheduling"] is False and ev["async_scheduling"]["basis"] == "asked"
    assert ev["kv_cache_tokens"] == {"basis": "observed", "line": KV.strip()}
    v2 = provenance.log_facts("(Worker pid=2) INFO [gpu_worker.py:518] Using V2 Model Runner\n" + KV)["evidence"]
    assert v2["model_runner"] == {
        "basis": "observed",
        "line": "(Worker pid=2) INFO [gpu_worker.py:518] Using V2 Model Runner",
    }
    off = provenance.log_facts(
        "WARNING [vllm.py:1] Async scheduling not supported with ngram and will be disabled.\n" + echo
    )["evidence"]["async_scheduling"]
    assert off["basis"] == "observed" and off["line"].startswith("WARNING")
    assert provenance.log_facts("(APIServer pid=1) INFO vllm serve ...\n")["evidence"] == {}
