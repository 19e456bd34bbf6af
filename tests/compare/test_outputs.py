"""Greedy outputs request by request: the first diverging token, characters without a tokenizer."""

from __future__ import annotations

import pytest

from tests.bundles import TEXTS, make_run
from tests.report.test_report import WordTokenizer

from .common import compare, one

pytestmark = pytest.mark.unit


def test_greedy_outputs_diverge_at_the_right_token(run_a, tmp_path):
    texts = {"code": {"r0": ("a b X d", "stop"), "r1": ("x y z", "length")}, "chat": TEXTS["chat"]}
    b = make_run(tmp_path, "div", texts=texts)
    cmp = compare(run_a, b, tok=WordTokenizer())
    for method in ("baseline", "ngram"):
        row = one(cmp.outputs, method=method, task="code", id="r0")
        assert row["same"] is False and row["first_token_divergence"] == 2 and row["first_char_divergence"] == 4
        assert one(cmp.outputs, method=method, task="code", id="r1")["same"] is True
        assert one(cmp.outputs_summary, method=method, task="code")["verdict"] == "changed (1 of 2 differ)"
        assert one(cmp.outputs_summary, method=method, task="chat")["verdict"] == "same"
    # without the tokenizer: characters, and the summary says why
    cmp = compare(run_a, b, tok=None)
    s = one(cmp.outputs_summary, method="ngram", task="code")
    assert s["unit"] == "character" and s["first_divergence_min"] == 4 and "not loaded" in s["tokenizer"]


def test_a_request_answered_on_one_side_only_or_failed_is_named_not_compared(run_a, tmp_path):
    texts = {"code": {"r0": (None, None, "HTTP 500: boom"), "r9": ("x y z", "length")}, "chat": TEXTS["chat"]}
    cmp = compare(run_a, make_run(tmp_path, "failed", texts=texts), tok=WordTokenizer())
    notes = {r["id"]: (r["same"], r["note"]) for r in cmp.outputs if r["method"] == "ngram" and r["task"] == "code"}
    assert notes == {
        "r0": (None, "failed request: HTTP 500: boom"),
        "r1": (None, "only in A"),
        "r9": (None, "only in B"),
    }
    assert one(cmp.outputs_summary, method="ngram", task="code")["verdict"] == "n/a (no request answered on both sides)"
