"""The request records of a method's bundle (`acceptance/<task>.jsonl`, `warmup.jsonl`): one JSON line per
request as sent and answered (`id`, a dataset row's `category` and `question_id`, `request`, `http_status`,
`response` or `error`, `seconds`; a plain-decode server's greedy answers also `top_logprobs`, per position
[[token_id, logprob], ...]), and the facts the accounting, the tables and the report take from each."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def request_fields(record: dict[str, Any]) -> dict[str, Any]:
    """The per-request facts the accounting and the report use."""
    body = record.get("response") or {}
    choice = (body.get("choices") or [{}])[0]
    return {
        "id": record["id"],
        "text": (choice.get("message") or {}).get("content"),
        "finish_reason": choice.get("finish_reason"),
        "usage": body.get("usage"),
        "spec": (body.get("metrics") or {}).get("speculative_decoding"),
        "error": record.get("error"),
        "token_ids": choice.get("token_ids"),
        "top_logprobs": record.get("top_logprobs"),
        "seconds": record.get("seconds"),
        "category": record.get("category"),
    }


def read_records(path: Path) -> list[dict[str, Any]]:
    """The request_fields of every record of an acceptance/warm-up JSONL file ([] if absent)."""
    if not path.exists():
        return []
    return [request_fields(json.loads(line)) for line in path.read_text().splitlines() if line.strip()]
