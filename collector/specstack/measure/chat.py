"""The request phases (warm-up, acceptance): chat requests sent as the acceptance accounting needs them
(greedy, n=1, no stop strings), each answer streamed to the bundle and folded into running sums."""

from __future__ import annotations

import json
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import requests

from specstack import events
from specstack.config.workloads import KEPT_FIELDS, Task
from specstack.measure import accounting
from specstack.measure.categories import CategorySums
from specstack.measure.windows import Outcome
from specstack.results.files import atomic_writer
from specstack.results.records import request_fields
from specstack.server.runtime import Server

SEED = 42
CHAT_TEMPLATE_KWARGS = {"enable_thinking": False}
# A plain-decode server's greedy answers carry their top-2 log-probabilities per position: where a speculative
# method's greedy answer differs, the report reads how close the baseline's own choice was there (a near tie
# that a different kernel shape can flip, or a real change). Speculative servers' requests stay as they were.
TOP_LOGPROBS = 2


def chat_payload(
    served_model_name: str,
    prompt: str | None,
    max_tokens: int,
    *,
    temperature: float = 0.0,
    seed: int = SEED,
    messages: list[dict[str, Any]] | None = None,
    top_logprobs: int = 0,
) -> dict[str, Any]:
    # One sequence, no stop strings: the per-request metrics are only complete for n=1 requests that end on
    # EOS or length (a stop string ends them in the frontend, without metrics). Greedy unless a sampled
    # phase asks for a temperature; then each request has its own seed, the same for every method.
    # `messages` (a turn-2 row's whole chat) replaces the one user message made of `prompt`.
    payload = {
        "model": served_model_name,
        "messages": messages or [{"role": "user", "content": prompt}],
        "temperature": temperature,
        "top_p": 1,
        "seed": seed,
        "n": 1,
        "max_tokens": max_tokens,
        "stream": False,
        "chat_template_kwargs": CHAT_TEMPLATE_KWARGS,
        "return_token_ids": True,
    }  # the answer's token ids: what the losslessness test compares
    if top_logprobs:  # tokens named "token_id:<id>", so a position's alternatives are token ids, not strings
        payload.update(logprobs=True, top_logprobs=top_logprobs, return_tokens_as_token_ids=True)
    return payload


def compact_logprobs(body: dict[str, Any]) -> list[list[list]] | None:
    """The answer's top log-probabilities as [[token_id, logprob], ...] per position, taken out of the response:
    vLLM's form spells every token's bytes (about 10x the size), which a dataset's thousands of answers would
    carry into the bundle for nothing."""
    choices = body.get("choices") or [{}]
    content = (choices[0].pop("logprobs", None) or {}).get("content")
    if content is None:
        return None
    return [
        [[int(t["token"].removeprefix("token_id:")), t["logprob"]] for t in entry.get("top_logprobs") or []]
        for entry in content
    ]


def sampled_rows(task: Task, temperature: float, samples: int = 1) -> list[dict[str, Any]]:
    """The task's acceptance rows at a temperature, each prompt `samples` times (ids `<id>/s<k>`), request j
    seeded SEED + j: every method draws the same seeds on the same prompts, so the samples differ only by what
    the method does to the distribution (report/lossless.py tests that it does nothing)."""
    return [
        {**row, "id": f"{row['id']}/s{k}", "temperature": temperature, "seed": SEED + i * samples + k}
        for i, row in enumerate(task.acceptance)
        for k in range(samples)
    ]


def send_chat(
    http: requests.Session, server: Server, row: dict[str, Any], timeout: float, *, speculative: bool = True
) -> dict[str, Any]:
    temperature = row.get("temperature", 0.0)
    payload = chat_payload(
        server.served_model_name,
        row.get("prompt"),
        row["max_tokens"],
        temperature=temperature,
        seed=row.get("seed", SEED),
        messages=row.get("messages"),
        top_logprobs=TOP_LOGPROBS if not speculative and temperature == 0 else 0,
    )
    record = {"id": row["id"], **{k: row[k] for k in KEPT_FIELDS if k in row}, "request": payload}
    start = time.perf_counter()
    try:
        r = http.post(f"{server.base_url}/v1/chat/completions", json=payload, timeout=timeout)
        record["http_status"] = r.status_code
        body = r.json() if r.headers.get("content-type", "").startswith("application/json") else {"text": r.text}
        record["response"] = body
        if payload.get("logprobs") and r.status_code == 200:
            record["top_logprobs"] = compact_logprobs(body)
        if r.status_code != 200:
            record["error"] = f"HTTP {r.status_code}: {str(body)[:300]}"
    except requests.RequestException as e:
        record["error"] = f"{type(e).__name__}: {e}"
    record["seconds"] = time.perf_counter() - start
    return record


def run_requests(
    server: Server, rows: list[dict[str, Any]], out_path: Path, *, concurrency: int, timeout: float, speculative: bool
) -> Outcome:
    """Send the rows; each answer is streamed to out_path as it is taken in order and folded into running
    sums (memory stays flat for thousands of requests); the file appears only complete."""
    reported, failed, missing, first_error = None, [], [], None
    by_category = CategorySums()  # a dataset's categories: the same sums, split by request
    with (
        requests.Session() as http,
        ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool,
        atomic_writer(out_path) as out,
    ):
        send = lambda row: send_chat(http, server, row, timeout, speculative=speculative)  # noqa: E731
        for done, record in enumerate(_in_order(pool, send, rows, 4 * concurrency), start=1):
            out.write((json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8"))
            events.emit("window.progress", done=done, total=len(rows))
            fields = request_fields(record)
            if fields["error"]:
                failed.append(fields["id"])
                first_error = first_error or fields["error"]
            elif speculative and fields["spec"] is None:
                missing.append(fields["id"])
            reported = accounting.add_request(reported, fields["spec"])
            by_category.add(record.get("category"), fields["spec"])
    if failed:
        return Outcome(
            error=f"{len(failed)} of {len(rows)} requests failed (first: {first_error}); ids: {', '.join(failed[:10])}",
            requests_sent=len(rows),
        )
    if missing:
        return Outcome(
            error=f"{len(missing)} responses lack metrics.speculative_decoding (ids: "
            f"{', '.join(missing[:10])}); the server must run with "
            "--per-request-spec-decode-metrics and requests must be n=1",
            requests_sent=len(rows),
        )
    return Outcome(reported=reported, summed_requests=True, requests_sent=len(rows), by_category=by_category)


def _in_order(pool: ThreadPoolExecutor, fn: Callable, items: list, ahead: int):
    """pool.map with at most `ahead` requests queued or running: map() would hold a future per row.
    Interrupted (a signal, or the consumer gone), the queued requests are dropped: only those in flight finish."""
    pending: deque = deque()
    try:
        for item in items:
            pending.append(pool.submit(fn, item))
            if len(pending) >= ahead:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise


def warmup_rows(task: Task, count: int) -> list[dict[str, Any]]:
    """Short requests on the task's own prompts: they load kernels and JIT (numba for ngram) off the clock."""
    return [
        {
            "id": f"warmup-{task.name}-{i}",
            "prompt": task.acceptance[i % len(task.acceptance)]["prompt"],
            "max_tokens": 16,
        }
        for i in range(count)
    ]
