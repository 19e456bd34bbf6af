"""run_requests' submission: answers come back in row order, with a bounded number of rows in flight
(so 1,000s of acceptance requests do not each hold a pending future)."""

from __future__ import annotations

import random
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from specstack.measure.chat import _in_order, send_chat
from specstack.server.runtime import Server

pytestmark = pytest.mark.unit


def test_in_order_keeps_row_order_and_bounds_what_is_in_flight():
    outstanding = {"now": 0, "max": 0}

    class CountingPool(ThreadPoolExecutor):
        def submit(self, fn, *args):
            outstanding["now"] += 1
            outstanding["max"] = max(outstanding["max"], outstanding["now"])
            return super().submit(fn, *args)

    def slow_square(x):
        time.sleep(random.uniform(0, 0.002))  # finish out of order
        return x * x

    got = []
    with CountingPool(max_workers=4) as pool:
        for value in _in_order(pool, slow_square, list(range(200)), ahead=8):
            outstanding["now"] -= 1
            got.append(value)
    assert got == [x * x for x in range(200)]
    assert outstanding["max"] == 8


def test_a_sampled_phase_sends_the_same_prompts_at_the_temperature_each_request_with_its_own_seed(tmp_path):
    from specstack.config.workloads import write_defaults
    from specstack.measure.chat import SEED, chat_payload, sampled_rows

    task = write_defaults(tmp_path, num_prompts=3, perf_output_len=8, acceptance_max_tokens=16, tasks=("code",))["code"]
    rows = sampled_rows(task, 0.6)
    assert [r["prompt"] for r in rows] == [r["prompt"] for r in task.acceptance]
    assert [(r["temperature"], r["seed"]) for r in rows] == [(0.6, SEED), (0.6, SEED + 1), (0.6, SEED + 2)]
    payload = chat_payload("m", rows[1]["prompt"], 16, temperature=rows[1]["temperature"], seed=rows[1]["seed"])
    assert (payload["temperature"], payload["seed"], payload["n"]) == (0.6, SEED + 1, 1)
    greedy = chat_payload("m", "p", 16)
    assert (greedy["temperature"], greedy["seed"]) == (0, SEED)


class _OneAnswer:
    """A session answering every chat request with one JSON body (the server's side is not under test)."""

    def post(self, url, json, timeout):
        self.sent = json

        class Response:
            status_code = 200
            headers = {"content-type": "application/json"}
            text = ""

            @staticmethod
            def json():
                return {"choices": [{"message": {"content": "ok"}, "finish_reason": "stop"}]}

        return Response()


def test_a_dataset_rows_category_and_question_id_reach_its_request_record():
    server = Server("http://127.0.0.1:1", "spec-demo", "url")
    http = _OneAnswer()
    row = {"id": "mt-bench-000", "prompt": "Write.", "max_tokens": 8, "category": "writing", "question_id": 81}
    record = send_chat(http, server, row, timeout=1)
    assert (record["id"], record["category"], record["question_id"]) == ("mt-bench-000", "writing", 81)
    assert "category" not in http.sent and http.sent["messages"][0]["content"] == "Write."
    plain = send_chat(http, server, {"id": "code-000", "prompt": "Edit.", "max_tokens": 8}, timeout=1)
    assert "category" not in plain


def test_only_a_plain_decode_servers_greedy_requests_ask_for_log_probs_and_keep_them_compact():
    server = Server("http://127.0.0.1:1", "spec-demo", "url")
    http = _OneAnswer()
    row = {"id": "code-000", "prompt": "Edit.", "max_tokens": 8}
    send_chat(http, server, row, timeout=1)
    assert "logprobs" not in http.sent  # a speculative server: as before
    send_chat(http, server, {**row, "temperature": 1.0}, timeout=1, speculative=False)
    assert "logprobs" not in http.sent  # sampled: no near tie to rate
    send_chat(http, server, row, timeout=1, speculative=False)
    assert http.sent["logprobs"] is True and http.sent["top_logprobs"] == 2
    assert http.sent["return_tokens_as_token_ids"] is True


def test_compact_logprobs_keeps_ids_and_log_probs_and_drops_the_bytes():
    from specstack.measure.chat import compact_logprobs

    entry = {
        "token": "token_id:16",
        "logprob": -0.3,
        "bytes": [44],
        "top_logprobs": [
            {"token": "token_id:16", "logprob": -0.3, "bytes": [1, 2]},
            {"token": "token_id:276", "logprob": -2.8, "bytes": [3]},
        ],
    }
    body = {"choices": [{"message": {"content": ","}, "logprobs": {"content": [entry]}}]}
    assert compact_logprobs(body) == [[[16, -0.3], [276, -2.8]]]
    assert "logprobs" not in body["choices"][0]
    assert compact_logprobs({"choices": [{"message": {"content": ""}}]}) is None
