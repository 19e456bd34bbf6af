"""Our goodput against vLLM 0.32.0's own (vllm.benchmarks.serve.calculate_metrics) on many constructed
requests, targets on and around the requests' own values: the same count, the same rate."""

import random

import pytest

from specstack.measure.goodput import crosscheck, figures

pytestmark = pytest.mark.config


def test_specstack_goodput_equals_vllm_bench_goodput():
    from vllm.benchmarks.datasets import SampleRequest
    from vllm.benchmarks.lib.endpoint_request_func import RequestFuncOutput
    from vllm.benchmarks.serve import calculate_metrics

    rng = random.Random(7)
    outputs = []
    for _ in range(200):
        ok = rng.random() > 0.1
        ttft = round(rng.uniform(0.01, 0.8), 3)
        n = rng.choice([1, 2, 16, 64]) if ok else 0
        outputs.append(
            RequestFuncOutput(
                success=ok,
                ttft=ttft if ok else 0.0,
                output_tokens=n,
                latency=round(ttft + rng.uniform(0, 2), 3) if ok else 0.0,
                error="" if ok else "HTTP 500",
                prompt_len=4,
            )
        )
    requests = [SampleRequest(prompt="p", prompt_len=4, expected_output_len=16)] * len(outputs)
    # targets that cut through the middle of the values, and one equal to a request's own TTFT (the boundary)
    for slo in (
        {"ttft": 400.0},
        {"tpot": 20.0},
        {"e2el": 1200.0},
        {"ttft": 300.0, "tpot": 30.0, "e2el": 1500.0},
        {"ttft": outputs[0].ttft * 1000 if outputs[0].success else 250.0},
    ):
        metrics, lens = calculate_metrics(requests, outputs, 12.5, None, [50.0], dict(slo))
        cell = {
            "ttfts": [o.ttft for o in outputs],
            "latencies": [o.latency for o in outputs],
            "output_lens": lens,
            "errors": [o.error for o in outputs],
            "duration": 12.5,
            "completed": metrics.completed,
            "request_goodput": metrics.request_goodput,
        }
        f = figures(cell, slo)
        assert 0 < f["good"] < f["completed"] == metrics.completed, slo
        assert f["goodput"] == metrics.request_goodput, slo
        assert all(c.ok for c in crosscheck(cell, slo)), slo
