"""Tokens per streamed chunk (figures/chunks.py, report/itl_chunks.py; issue 41 point 9): a speculative cell whose
chunks carry several tokens shows it beside its ITL, with a ⚠ note giving the ITL per token; a cell without
bench's per-request data says n/a, never 0 or 1."""

from __future__ import annotations

import pytest

from specstack.figures import chunks
from specstack.report import build, render, sections, tables
from tests.bundles import per_request_lists, write_method

pytestmark = pytest.mark.unit

TEXTS = {"chat": {"a": ("t", "stop")}}
ACC = {
    "acceptance_rate": 0.5,
    "mean_acceptance_length": 3.0,
    "histogram": [2, 1, 1, 0, 4],
    "per_position": [0.75, 0.625, 0.5, 0.5],
    "no_accept_share": 0.25,
    "num_spec_steps": 8,
    "num_draft_tokens": 32,
    "num_accepted_draft_tokens": 16,
}
N, TOKENS = 16, 64


def _speculative() -> dict:
    """16 answers of 64 tokens each streamed in 26 chunks (25 gaps of 4 ms), and a 17th request that failed
    (no answer: left out of both sums)."""
    lists = per_request_lists([20.0] * N, [[4.0] * 25] * N)
    lists["output_lens"] = [TOKENS] * N
    for key, failed in (
        ("start_times", lists["start_times"][-1] + 1),
        ("ttfts", 0.0),
        ("itls", []),
        ("latencies", 0.0),
        ("errors", "boom"),
        ("output_lens", 0),
    ):
        lists[key] = [*lists[key], failed]
    return lists


def _report(tmp_path) -> tuple[build.Report, str]:
    """A baseline streaming one token a chunk and ngram streaming 64 ÷ 26 = 2.46 a chunk at c=1; at c=4 the
    bench files keep no per-request lists (a bundle from before --save-detailed)."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    steady = per_request_lists([20.0] * N, [[1.5] * (TOKENS - 1)] * N)
    base = {
        ("chat", 1): [(1.5, 500.0, {"completed": N, "out_tokens": N * TOKENS, "requests": steady})],
        ("chat", 4): [(1.5, 900.0, {"completed": N, "out_tokens": N * TOKENS})],
    }
    spec = {
        ("chat", 1): [
            (1.0, 700.0, {"completed": N, "out_tokens": N * TOKENS, "acc_len": 2.5, "requests": _speculative()})
        ],
        ("chat", 4): [(1.0, 1200.0, {"completed": N, "out_tokens": N * TOKENS, "acc_len": 2.5})],
    }
    write_method(run_dir, "baseline", baseline=None, k=None, cells=base, texts=TEXTS)
    write_method(run_dir, "ngram", baseline="baseline", cells=spec, texts=TEXTS, acceptance={"chat": ACC})
    rep = build.build(run_dir, with_plots=False)
    tables.table_bytes("speed", rep.speed)  # the tidy tables declare the new columns
    tables.table_bytes("bench_cells", rep.cells)
    return rep, render.render_markdown(sections.blocks(rep))


def _latency_cell(md: str, method: str, c: int) -> str:
    """The tokens per chunk cell of a row of the latency percentiles table."""
    header = next(line for line in md.splitlines() if "| tokens per chunk |" in line)
    at = [x.strip() for x in header.split("|")].index("tokens per chunk")
    row = next(line for line in md.splitlines() if line.startswith(f"| {method} | {c} |"))
    return row.split("|")[at].strip()


def test_chunks_that_carry_several_tokens_are_shown_beside_the_itl_with_its_per_token_gap(tmp_path):
    rep, md = _report(tmp_path)
    ngram = next(r for r in rep.speed if r["method"] == "ngram" and r["concurrency"] == 1)
    assert ngram["tokens_per_chunk"] == pytest.approx(TOKENS / 26) and ngram["itl_per_chunk"] is True
    assert ngram["itl_p50_per_token_ms"] == pytest.approx(ngram["itl_p50_ms"] * 26 / TOKENS)
    assert _latency_cell(md, "ngram", 1) == "2.46 ⚠" and _latency_cell(md, "baseline", 1) == "1.00"
    note = next(line for line in md.splitlines() if line.startswith("⚠ **ITL is per chunk in these cells**"))
    assert (
        f"ngram c=1: 2.46 tokens per chunk, ITL p50 {ngram['itl_p50_ms']:.2f} ms per chunk ≈ "
        f"{ngram['itl_p50_ms'] * 26 / TOKENS:.2f} ms per token" in note
    )
    assert "baseline c=1" not in note and "c=4" not in note  # one token a chunk; no data: not judged
    assert md.index("### Latency percentiles") < md.index("⚠ **ITL is per chunk")


def test_a_cell_without_per_request_data_says_n_a(tmp_path):
    rep, md = _report(tmp_path)
    assert _latency_cell(md, "ngram", 4) == "n/a" and _latency_cell(md, "baseline", 4) == "n/a"
    row = next(r for r in rep.speed if r["method"] == "ngram" and r["concurrency"] == 4)
    assert row["tokens_per_chunk"] is None and row["itl_per_chunk"] is None and row["itl_p50_per_token_ms"] is None


def test_one_token_a_chunk_has_no_note(tmp_path):
    run_dir = tmp_path / "plain"
    run_dir.mkdir()
    lists = per_request_lists([20.0] * N, [[1.5] * (TOKENS - 1)] * N)
    write_method(
        run_dir,
        "baseline",
        baseline=None,
        k=None,
        texts=TEXTS,
        cells={("chat", 1): [(1.5, 500.0, {"completed": N, "out_tokens": N * TOKENS, "requests": lists})]},
    )
    md = render.render_markdown(sections.blocks(build.build(run_dir, with_plots=False)))
    assert _latency_cell(md, "baseline", 1) == "1.00" and "ITL is per chunk" not in md


def test_the_pure_figures():
    bench = {"itls": [[0.1, 0.1], [], [0.1]], "output_lens": [6, 1, 0], "errors": ["", "", ""]}
    assert chunks.stream_chunks(bench) == {"output_tokens": 7, "chunks": 4}  # a 0-token request is no answer
    assert chunks.stream_chunks({"itls": [[0.1]], "output_lens": [3], "errors": ["boom"]}) is None
    assert chunks.stream_chunks({"itls": [[0.1]]}) is None and chunks.stream_chunks(None) is None
    assert chunks.tokens_per_chunk([None, {"output_tokens": 6, "chunks": 3}, {"output_tokens": 2, "chunks": 1}]) == 2.0
    assert chunks.tokens_per_chunk([None]) is None
    assert not chunks.multi_token(1.004) and chunks.multi_token(1.006) and not chunks.multi_token(None)
