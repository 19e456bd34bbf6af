"""The report's arithmetic on constructed bundles (same layout and keys as a real `specstack sweep` bundle):
speedups as ratios of medians, the bootstrap interval, crossover, unstable percentiles, efficiency, KV loss,
preemptions, output equality with the first diverging token, None vs 0, failed and non-comparable runs, K sweep.
Fast: no server, no model; the tokenizer is a stand-in where a token index is checked."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from specstack.errors import UserError
from specstack.figures import equality as text_equality
from specstack.figures import stats as st
from specstack.report import build, equality, render, sections, tables
from specstack.results.reader import resolve_run_dir
from tests.bundles import chat_record, contradict, manifest, write_method

pytestmark = pytest.mark.unit


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
BASE_TEXTS = {
    "code": {"r0": ("a b c d", "stop"), "r1": ("x y z", "length"), "r2": ("same", "stop")},
    "chat": {"q0": ("hello there", "stop")},
}
SPEC_TEXTS = {
    "code": {"r0": ("a b X d", "stop"), "r1": ("x y z w", "stop"), "r2": ("same", "stop")},
    "chat": {"q0": ("hello there", "stop")},
}


@pytest.fixture
def bundle(tmp_path) -> Path:
    run_dir = tmp_path / "r1"
    run_dir.mkdir()
    n = {}
    base_cells = {
        ("code", 1): [(10.0, 100.0, {}), (11.0, 95.0, {}), (9.0, 105.0, {})],
        ("code", 4): [(20.0, 300.0, {}), (21.0, 290.0, {}), (19.0, 310.0, {})],
        ("chat", 1): [(10.0, 100.0, {})] * 3,
        ("chat", 4): [(20.0, 300.0, {})] * 3,
    }
    write_method(run_dir, "baseline", baseline=None, k=None, kv=100_000, cells=base_cells, texts=BASE_TEXTS)
    # ngram: clearly faster at c=1, clearly slower at c=4 on code
    ngram_cells = {
        ("code", 1): [(5.0, 190.0, {"acc_len": 2.5}), (5.5, 180.0, {"acc_len": 2.5}), (4.5, 200.0, {"acc_len": 2.5})],
        ("code", 4): [
            (25.0, 250.0, {"acc_len": 2.5, "failed": 1, "completed": 7}),
            (26.0, 240.0, {"acc_len": 2.5}),
            (24.0, 260.0, {"acc_len": 2.5}),
        ],
        ("chat", 1): [(10.0, 100.0, {"acc_len": 1.5}), (9.0, 110.0, {"acc_len": 1.5}), (11.0, 90.0, {"acc_len": 1.5})],
        ("chat", 4): [(20.0, 300.0, {"acc_len": 1.5})] * 3,
    }
    write_method(
        run_dir,
        "ngram",
        baseline="baseline",
        kv=100_000,
        cells=ngram_cells,
        texts=SPEC_TEXTS,
        acceptance={
            "code": ACC,
            "chat": {
                **ACC,
                "num_draft_tokens": 0,
                "num_spec_steps": 0,
                "num_accepted_draft_tokens": 0,
                "acceptance_rate": 0.0,
                "mean_acceptance_length": 1.0,
                "histogram": [0] * 5,
                "per_position": [0.0] * 4,
                "no_accept_share": 0.0,
            },
        },
        preemptions={("code", 4, 0): 2.0, ("code", 4, 2): 1.0},
    )
    write_method(
        run_dir,
        "draft_model",
        baseline="baseline",
        kv=80_000,
        cells={k: [(t * 0.8, p * 1.2, {"acc_len": 2.0}) for t, p, _ in v] for k, v in base_cells.items()},
        texts=SPEC_TEXTS,
        acceptance={"code": ACC, "chat": ACC},
        comparable=False,
    )
    failed = write_method(
        run_dir,
        "eagle3",
        baseline="baseline",
        cells={("code", 1): [(1.0, 1000.0, {})]},
        texts=SPEC_TEXTS,
        status="failed",
        folder="eagle3.failed-20261129T120000",
    )
    n.update(
        {
            "baseline": {"status": "ok", "dir": "baseline", "error": None},
            "ngram": {"status": "ok", "dir": "ngram", "error": None},
            "draft_model": {"status": "ok", "dir": "draft_model", "error": None},
            "eagle3": {"status": "failed", "dir": failed.name, "error": "server did not start"},
        }
    )
    manifest(run_dir, n)
    return run_dir


class WordTokenizer:
    """Stand-in tokenizer: one token per whitespace-separated word."""

    def encode(self, text, add_special_tokens=False):
        return text.split()


class FixedTokenizers(equality.Tokenizers):
    def __init__(self, tok):
        super().__init__()
        self.tok = tok

    def get(self, path):
        return (self.tok, None) if self.tok else (None, "stand-in: no tokenizer")


def _row(rows, **match):
    found = [r for r in rows if all(r[k] == v for k, v in match.items())]
    assert len(found) == 1, (match, found)
    return found[0]


# --- pure arithmetic ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "a,b,expected",
    [
        ("abc", "abc", None),
        ("abc", "abX", 2),
        ("abc", "ab", 2),
        ("", "x", 0),
        ("", "", None),
        ("xbc", "abc", 0),
        ([1, 2, 3], [1, 2, 3, 4], 3),
        ([5, 2], [1, 2], 0),
    ],
)
def test_first_divergence(a, b, expected):
    assert st.first_divergence(a, b) == expected


def test_compare_texts_counts_tokens_not_characters():
    out = text_equality.compare_texts("alpha beta gamma delta", "alpha beta GAMMA delta", WordTokenizer())
    assert out == {"equal": False, "first_token_divergence": 2, "first_char_divergence": 11}
    assert text_equality.compare_texts("same text", "same text", WordTokenizer())["equal"] is True
    out = text_equality.compare_texts("one two", "one two three", WordTokenizer())  # strict prefix
    assert out["first_token_divergence"] == 2 and out["first_char_divergence"] == 7
    out = text_equality.compare_texts("abc", "abd", None)  # no tokenizer: characters only
    assert out["first_token_divergence"] is None and out["first_char_divergence"] == 2


def test_bootstrap_is_deterministic_and_brackets_the_point():
    base, mine = [10.0, 11.0, 9.0, 10.5, 9.5], [5.0, 5.5, 4.5, 5.2, 4.8]
    a, b = st.bootstrap_ratio(base, mine), st.bootstrap_ratio(base, mine)
    assert (a.point, a.low, a.high) == (b.point, b.low, b.high)
    assert a.point == pytest.approx(10.0 / 5.0)
    assert a.low <= a.point <= a.high and a.low > 1.0
    assert a.verdict() == "faster"


def test_bootstrap_crossing_one_is_no_clear_difference_and_one_repeat_has_no_interval():
    iv = st.bootstrap_ratio([10.0, 12.0, 8.0], [9.0, 13.0, 10.0])
    assert iv.crosses_one and iv.verdict() == "no clear difference"
    one = st.bootstrap_ratio([10.0], [5.0])
    assert one.point == 2.0 and one.low is None and one.high is None
    assert one.verdict().startswith("no interval")
    assert st.bootstrap_ratio([], [5.0]).point is None and st.bootstrap_ratio([], [5.0]).verdict() == "n/a"


@pytest.mark.parametrize(
    "points,kind,at",
    [
        ({1: 1.8, 4: 1.2, 16: 0.9, 32: 0.7}, "crossover", 16),
        ({1: 1.8, 4: 1.0}, "crossover", 4),  # exactly 1.0x is not beating
        ({1: 1.1, 4: 1.3}, "always", None),
        ({1: 0.9, 4: 0.8}, "never", None),
        ({1: 0.9, 4: 1.2}, "mixed", None),
        ({1: None, 4: None}, "n/a", None),
        ({4: 0.9, 1: 1.5, 2: None}, "crossover", 4),  # order-independent, None cells ignored
    ],
)
def test_crossover(points, kind, at):
    out = st.crossover(points)
    assert out["kind"] == kind and out["concurrency"] == at, out


def test_crossover_uses_the_interval_when_there_is_one():
    points = {1: 3.1, 4: 1.5, 8: 1.2}
    lows = {1: 0.4, 4: 1.1, 8: 0.9}  # c=1: point > 1 but the interval crosses 1.0x -> not a win
    out = st.crossover(points, lows)
    assert out["kind"] == "mixed" and "clearly" in out["text"]
    out = st.crossover({1: 1.8, 4: 1.3, 8: 1.1}, {1: 1.5, 4: 1.05, 8: 0.95})
    assert (out["kind"], out["concurrency"], out["last_win"]) == ("crossover", 8, 4)
    assert st.crossover({1: 1.2}, {1: None})["kind"] == "always"  # one repeat: the point decides


def test_unstable_percentiles_threshold():
    assert st.min_samples(95) == 200 and st.min_samples(99) == 1000
    assert st.unstable(95, 8) and st.unstable(99, 999) and st.unstable(95, None)
    assert not st.unstable(95, 200) and not st.unstable(99, 1000) and not st.unstable(50, 1)


def test_none_is_not_zero():
    assert st.ratio(3, 0) is None and st.ratio(None, 2) is None and st.ratio(0, 2) == 0
    assert st.kv_loss(None, 100) is None and st.kv_loss(80, 100) == pytest.approx(0.2)
    assert st.median([]) is None and st.median([None, 2.0]) == 2.0
    assert st.gain_stop({1: 10.0, 2: 8.0, 3: 7.9, 4: 8.5}) == 2  # 7.9 best; 8.0 within 2 %
    assert st.gain_stop({1: 10.0, 2: 8.0, 3: 7.0}) == 3
    assert st.gain_stop({}) is None


# --- on a bundle -------------------------------------------------------------------------------------------


def test_speedups_are_ratios_of_medians_from_the_bench_files(bundle):
    rep = build.build(bundle, FixedTokenizers(WordTokenizer()), with_plots=False)
    r = _row(rep.speed, method="ngram", task="code", concurrency=1)
    assert r["tpot_speedup"] == pytest.approx(10.0 / 5.0)  # median(10,11,9) / median(5,5.5,4.5)
    assert r["throughput_speedup"] == pytest.approx(190.0 / 100.0)
    assert r["tpot_verdict"] == "faster" and r["tpot_speedup_low"] > 1.0
    # 376 decode tokens, 20 accepted: 356 passes, 10 of them verified a draft
    assert r["tokens_per_target_pass"] == pytest.approx(376 / 356) and r["drafting_share"] == pytest.approx(10 / 356)
    assert r["efficiency"] == pytest.approx(2.0 / (376 / 356))  # speedup / tokens per target pass
    assert r["efficiency_verify_steps"] == pytest.approx(2.0 / 2.5)  # speedup / bench acceptance length
    r4 = _row(rep.speed, method="ngram", task="code", concurrency=4)
    assert r4["tpot_speedup"] == pytest.approx(20.0 / 25.0) and r4["tpot_verdict"] == "slower"
    assert r4["preemptions"] == 3.0 and r4["failed_requests"] == 1
    assert r4["tpot_p95_unstable"] and r4["tpot_p99_unstable"]  # 7-8 requests per repeat
    chat = _row(rep.speed, method="ngram", task="chat", concurrency=1)
    assert chat["tpot_speedup"] == pytest.approx(1.0) and chat["tpot_verdict"] == "no clear difference"
    base = _row(rep.speed, method="baseline", task="code", concurrency=1)
    assert base["tpot_speedup"] is None and base["tpot_verdict"] == "reference" and base["efficiency"] is None
    dm = _row(rep.speed, method="draft_model", task="code", concurrency=1)
    assert dm["kv_cache_loss"] == pytest.approx(0.2) and not dm["comparable"]
    assert "NOT COMPARABLE" in dm["note"]
    cross = _row(rep.crossover, method="ngram", task="code")
    assert cross["tpot_kind"] == "crossover" and cross["tpot_crossover_concurrency"] == 4


def test_failed_runs_are_reported_never_used(bundle):
    rep = build.build(bundle, FixedTokenizers(WordTokenizer()), with_plots=False)
    assert "eagle3" not in rep.run.methods
    assert not [r for r in rep.speed if r["method"] == "eagle3"]
    assert _row(rep.methods, method="eagle3")["status"] == "failed"
    md = render.render_markdown(sections.blocks(rep))
    assert "eagle3: FAILED (server did not start)" in md


def test_acceptance_none_vs_zero(bundle):
    rep = build.build(bundle, FixedTokenizers(WordTokenizer()), with_plots=False)
    chat = _row(rep.acceptance, method="ngram", task="chat")  # spec on, no drafts: n/a, not 0 %
    assert chat["acceptance_rate"] is None and chat["mean_acceptance_length"] is None
    assert chat["no_accept_share"] is None and chat["histogram"] is None
    base = _row(rep.acceptance, method="baseline", task="code")
    assert base["acceptance_rate"] is None
    code = _row(rep.acceptance, method="ngram", task="code")
    assert code["acceptance_rate"] == 0.5 and code["no_accept_share"] == 0.25
    assert [p["rate"] for p in rep.positions if p["method"] == "ngram" and p["task"] == "code"] == ACC["per_position"]
    md = render.render_markdown(sections.blocks(rep))
    chat_line = next(line for line in md.splitlines() if line.startswith("| ngram | 4 | n/a ⚑ |"))  # 0.0 stated
    assert "0.0 %" not in chat_line


def test_output_equality_per_request(bundle):
    rep = build.build(bundle, FixedTokenizers(WordTokenizer()), with_plots=False)
    r0 = _row(rep.equality, method="ngram", task="code", id="r0")
    assert r0["equal"] is False and r0["first_token_divergence"] == 2 and r0["unit"] == "token"
    r1 = _row(rep.equality, method="ngram", task="code", id="r1")  # baseline hit the length limit
    assert r1["first_token_divergence"] == 3
    assert (r1["finish_reason"], r1["baseline_finish_reason"]) == ("stop", "length")
    assert _row(rep.equality, method="ngram", task="code", id="r2")["equal"] is True
    s = _row(rep.equality_summary, method="ngram", task="code")
    assert (s["compared"], s["equal"], s["finish_reason_differs"]) == (3, 1, 1)
    assert s["equal_rate"] == pytest.approx(1 / 3)
    assert _row(rep.equality_summary, method="ngram", task="chat")["equal_rate"] == 1.0


def test_equality_falls_back_to_characters_and_says_so(bundle):
    rep = build.build(bundle, equality.Tokenizers(), with_plots=False)  # /nonexistent/tokenizer cannot load
    r0 = _row(rep.equality, method="ngram", task="code", id="r0")
    assert r0["unit"] == "character" and r0["first_char_divergence"] == 4 and r0["first_token_divergence"] is None
    s = _row(rep.equality_summary, method="ngram", task="code")
    assert s["unit"] == "character" and "not loaded" in s["tokenizer"]


A = {"id": "r0", "error": None, "text": "a b", "messages": [{"role": "user", "content": "p"}]}


@pytest.mark.parametrize(
    "b, note",
    [
        (None, "no baseline response with this id"),
        ({**A, "error": "HTTP 500: boom"}, "failed request: HTTP 500: boom"),
        ({**A, "text": None}, "no text in a response"),
        (
            {**A, "messages": [{"role": "user", "content": "other"}]},
            "different prompts under the same id; not compared",
        ),
        ({**A, "text": "a c"}, None),  # other text: compared, not excused
    ],
)
def test_why_a_request_pair_is_not_compared(b, note):
    """One chain of reasons for the report and compare (compare/outputs.py names the missing side its own way)."""
    assert text_equality.not_compared(A, b, "no baseline response with this id") == note


def test_failed_request_is_not_counted_as_equal(tmp_path):
    run_dir = tmp_path / "r2"
    run_dir.mkdir()
    cells = {("code", 1): [(10.0, 100.0, {})]}
    write_method(run_dir, "baseline", baseline=None, k=None, cells=cells, texts={"code": {"a": ("t", "stop")}})
    write_method(
        run_dir, "ngram", baseline="baseline", cells=cells, texts={"code": {"a": (None, None, "HTTP 500: boom")}}
    )
    rep = build.build(run_dir, FixedTokenizers(WordTokenizer()), with_plots=False)
    r = _row(rep.equality, method="ngram", id="a")
    assert r["equal"] is None and r["note"] == "failed request: HTTP 500: boom"
    s = _row(rep.equality_summary, method="ngram", task="code")
    assert s["compared"] == 0 and s["equal_rate"] is None
    one = _row(rep.speed, method="ngram", concurrency=1)
    assert one["tpot_speedup"] == 1.0 and one["tpot_verdict"].startswith("no interval")


def test_k_sweep_detected_and_gain_stop(tmp_path):
    run_dir = tmp_path / "ks"
    run_dir.mkdir()
    write_method(
        run_dir,
        "baseline",
        baseline=None,
        k=None,
        cells={("code", 1): [(10.0, 100.0, {})] * 2},
        texts={"code": {"a": ("t", "stop")}},
    )
    for k, tpot, acc in ((1, 8.0, 1.6), (2, 6.0, 2.1), (3, 5.95, 2.4), (4, 6.5, 2.5)):
        write_method(
            run_dir,
            f"ngram-k{k}",
            baseline="baseline",
            k=k,
            spec_override={"num_speculative_tokens": k},
            cells={("code", 1): [(tpot, 100.0, {"acc_len": acc})] * 2},
            texts={"code": {"a": ("t", "stop")}},
            acceptance={"code": ACC},
            base_method="ngram",
        )
    rep = build.build(run_dir, FixedTokenizers(WordTokenizer()))
    rows = [r for r in rep.ksweep if r["task"] == "code"]
    assert sorted(r["k"] for r in rows) == [1, 2, 3, 4]
    assert {r["gain_stops_at_k"] for r in rows} == {2}
    assert _row(rows, k=3)["tpot_speedup"] == pytest.approx(10.0 / 5.95)
    assert "report/k_sweep_ngram_code.png" in rep.plots


def test_write_report_files(bundle):
    path = build.write_report(bundle, FixedTokenizers(WordTokenizer()))
    assert path == bundle / "report.md"
    html = (bundle / "report.html").read_text()
    assert "data:image/png;base64," in html and 'src="report/' not in html and "http" not in html.split("<body>")[0]
    for name in (
        "speed",
        "bench_cells",
        "crossover",
        "acceptance",
        "acceptance_positions",
        "acceptance_histogram",
        "equality_requests",
        "equality_summary",
        "methods",
        "ksweep",
    ):
        csv = pd.read_csv(bundle / "report" / "tables" / f"{name}.csv")  # header even when empty (ksweep here)
        pq = pd.read_parquet(bundle / "report" / "tables" / f"{name}.parquet")
        assert list(csv.columns) == list(pq.columns) == tables.COLUMNS[name]
    speed = pd.read_parquet(bundle / "report" / "tables" / "speed.parquet")
    assert len(speed) == 3 * 2 * 2  # 3 good methods x 2 tasks x 2 concurrencies; the failed one is absent
    for png in (
        "speedup_vs_concurrency_code",
        "acceptance_by_position_ngram",
        "histogram_ngram_code",
        "histogram_draft_model_chat",
    ):
        assert (bundle / "report" / f"{png}.png").stat().st_size > 1000
    md = path.read_text()
    matrix = next(line for line in md.splitlines() if line.startswith("| ngram | baseline |"))
    cells = [c.strip() for c in matrix.strip("|").split("|")][2:]  # code c=1, code c=4, chat c=1, chat c=4
    assert cells[0].startswith("helped · TPOT p50 2.00×") and cells[1].startswith("slower · TPOT p50 0.80×")
    assert cells[2].startswith("no clear difference")
    assert "NOT COMPARABLE" in md and "†" in md


def test_resolve_run_dir(bundle):
    assert resolve_run_dir(bundle) == bundle
    assert resolve_run_dir("r1", bundle.parent) == bundle
    with pytest.raises(UserError):
        resolve_run_dir("nope", bundle.parent)


def test_efficiency_of_a_drafter_on_half_the_steps_is_shown_against_both_bounds(tmp_path):
    run_dir = tmp_path / "half"
    run_dir.mkdir()
    # 4 answers of 101 tokens; the method's 200 passes emit 400 decode tokens, 100 of them verified a draft
    base = {("code", 1): [(10.0, 100.0, {"completed": 4, "out_tokens": 404})] * 3}
    half = {
        ("code", 1): [
            (10.0 / 1.5, 150.0, {"completed": 4, "out_tokens": 404, "acc_len": 3.0, "drafts": 100, "accepted": 200})
        ]
        * 3
    }
    write_method(run_dir, "baseline", baseline=None, k=None, cells=base, texts={"code": {"a": ("t", "stop")}})
    write_method(
        run_dir,
        "ngram",
        baseline="baseline",
        cells=half,
        texts={"code": {"a": ("t", "stop")}},
        acceptance={"code": ACC},
    )
    rep = build.build(run_dir, FixedTokenizers(WordTokenizer()), with_plots=False)
    r = _row(rep.speed, method="ngram", concurrency=1)
    assert r["tokens_per_target_pass"] == pytest.approx(2.0) and r["drafting_share"] == pytest.approx(0.5)
    assert r["efficiency"] == pytest.approx(0.75) and r["efficiency_verify_steps"] == pytest.approx(0.5)
    assert r["note"] is None
    md = render.render_markdown(sections.blocks(rep))
    assert "| 2.00 (50 %) | 75 % (50 % per verify step) |" in md


def _spec_line(ids_drafted_accepted_tokens: dict, k: int = 4) -> dict[str, dict]:
    """Acceptance records with `detailed` metrics: {id: (per_step_drafted, per_step_accepted, completion tokens)}."""
    out = {}
    for rid, (drafted, accepted, tokens) in ids_drafted_accepted_tokens.items():
        hist = [0] * (k + 1)
        for a in accepted:
            hist[a] += 1
        out[rid] = {
            "num_spec_steps": len(drafted),
            "num_draft_tokens": sum(drafted),
            "num_accepted_draft_tokens": sum(accepted),
            "acceptance_histogram": hist,
            "per_step_drafted": drafted,
            "per_step_accepted": accepted,
            "tokens": tokens,
        }
    return out


def test_acceptance_shows_both_per_position_rates_and_names_how_answers_ended(tmp_path):
    run_dir = tmp_path / "pos"
    run_dir.mkdir()
    cells = {("code", 1): [(10.0, 100.0, {})]}
    write_method(run_dir, "baseline", baseline=None, k=None, cells=cells, texts={"code": {"a": ("t", "length")}})
    d = write_method(
        run_dir,
        "suffix",
        baseline="baseline",
        cells=cells,
        texts={"code": {"a": ("t", "length")}},
        acceptance={
            "code": {
                **ACC,
                "per_position": [1.0, 0.5, 0.25, 0.0],
                "per_position_conditional": [1.0, 1.0, 1.0, 0.0],
                "drafted_per_position": [4, 2, 1, 1],
            }
        },
    )
    # the request drafted 1, 1, 4, 2 tokens, accepted 1, 1, 3, 2 and returned 8 tokens: 1 + 4 + 7 = 12 counted
    spec = _spec_line({"a": ([1, 1, 4, 2], [1, 1, 3, 2], 8)})["a"]
    rec = chat_record("a", "prompt a", "t", "length", {k: v for k, v in spec.items() if k != "tokens"})
    rec["response"]["usage"]["completion_tokens"] = spec["tokens"]
    (d / "acceptance" / "code.jsonl").write_text(json.dumps(rec) + "\n")
    summary = json.loads((d / "summary.json").read_text())
    summary["tasks"]["code"]["finish_reasons"] = {"length": 1}
    (d / "summary.json").write_text(json.dumps(summary))
    rep = build.build(run_dir, FixedTokenizers(WordTokenizer()))
    caption = rep.plot_captions["report/acceptance_by_position_suffix.png"]
    assert "right: as a share of the steps that drafted" in caption
    pos = [(p["rate"], p["conditional_rate"], p["drafted_steps"]) for p in rep.positions if p["method"] == "suffix"]
    assert pos == [(1.0, 1.0, 4), (0.5, 1.0, 2), (0.25, 1.0, 1), (0.0, 0.0, 1)]
    row = _row(rep.acceptance, method="suffix")
    assert row["accepted_past_end"] == 4
    md = render.render_markdown(sections.blocks(rep))
    assert "every answer hit max_tokens, none stopped on its own" in md and "natural stops" not in md
    assert "| 1.00, 0.50, 0.25, 0.00 | 1.00, 1.00, 1.00, 0.00 |" in md
    assert "Drafts accepted past the end" in md and "suffix 4" in md


def test_verdicts_never_contradict_their_intervals(tmp_path):
    run_dir = tmp_path / "v"
    run_dir.mkdir()
    base = {("code", 1): [(10.0, 100.0, {}), (10.1, 100.0, {}), (9.9, 100.0, {})], ("code", 4): [(10.0, 100.0, {})]}
    spec = {
        ("code", 1): [
            (8.0, 130.0, {"acc_len": 2.0}),
            (8.1, 70.0, {"acc_len": 2.0}),  # faster per token;
            (7.9, 100.0, {"acc_len": 2.0}),
        ],  # throughput unclear
        ("code", 4): [(5.0, 200.0, {"acc_len": 2.0})],
    }  # one repeat
    write_method(run_dir, "baseline", baseline=None, k=None, cells=base, texts={"code": {"a": ("t", "stop")}})
    write_method(
        run_dir,
        "ngram",
        baseline="baseline",
        cells=spec,
        texts={"code": {"a": ("t", "stop")}},
        acceptance={"code": ACC},
    )
    rep = build.build(run_dir, FixedTokenizers(WordTokenizer()))
    c1, c4 = _row(rep.speed, method="ngram", concurrency=1), _row(rep.speed, method="ngram", concurrency=4)
    assert c1["tpot_speedup_low"] > 1.0 and c1["throughput_speedup_low"] <= 1.0 <= c1["throughput_speedup_high"]
    assert c1["verdict"] == "faster per token only"  # never "helped" with a throughput interval over 1.0x
    assert c4["verdict"] == "point only" and c4["stability"] == "single" and c4["tpot_speedup_low"] is None
    md = render.render_markdown(sections.blocks(rep))
    matrix = next(line for line in md.splitlines() if line.startswith("| ngram | baseline |"))
    assert "faster per token only" in matrix
    # c=4: the baseline served what it did at c=1, and 2× is beyond the cells' tokens per target pass (#41)
    assert (
        "point only · TPOT p50 2.00× (mean 2.00×, p95 2.00×) · tput 2.00× ⚠ no batching gain ⚠ beyond bound "
        "⚠ single measurement"
    ) in matrix
    assert "helped ·" not in md


def test_no_zero_length_interval_bars(monkeypatch):
    from matplotlib.axes import Axes

    from specstack.report import plots

    drawn = []
    real = Axes.errorbar
    monkeypatch.setattr(
        Axes, "errorbar", lambda self, x, y, **kw: drawn.append((list(x), kw["yerr"])) or real(self, x, y, **kw)
    )
    plots.speedup_vs_concurrency(
        "code", {"ngram": {"tpot": [(1, 1.3, 1.1, 1.5), (4, 0.9, None, None)], "throughput": [(1, 1.2, None, None)]}}
    )
    assert drawn == [([1], [[pytest.approx(0.2)], [pytest.approx(0.2)]])]  # c=4 and the throughput cell: no bar


def test_degenerate_itl_is_flagged_and_itl_is_explained(tmp_path):
    run_dir = tmp_path / "itl"
    run_dir.mkdir()
    cells = {("chat", 1): [(10.0, 100.0, {})] * 3}
    write_method(run_dir, "baseline", baseline=None, k=None, cells=cells, texts={"chat": {"a": ("t", "stop")}})
    d = write_method(
        run_dir,
        "draft_model",
        baseline="baseline",
        cells=cells,
        texts={"chat": {"a": ("t", "stop")}},
        acceptance={"chat": ACC},
    )
    for f in (d / "bench").glob("*.json"):  # bursty delivery: every gap but a few is 0
        data = json.loads(f.read_text())
        data["p50_itl_ms"] = 0.0
        f.write_text(json.dumps(data))
    rep = build.build(run_dir, FixedTokenizers(WordTokenizer()), with_plots=False)
    assert _row(rep.speed, method="draft_model")["itl_degenerate"] is True
    assert _row(rep.speed, method="baseline")["itl_degenerate"] is False
    md = render.render_markdown(sections.blocks(rep))
    assert "0.0 / 30.0 / 40.0† ‡" in md and "per chunk, not per token" in md


def test_sessions_are_resampled_as_pairs_and_the_design_is_named(tmp_path):
    run_dir = tmp_path / "sessions"
    run_dir.mkdir()
    # the machine slows down session after session; in each pair the method is 1.25x faster per token
    base_tpot = [10.0, 14.0, 18.0]
    for s, tpot in enumerate(base_tpot, start=1):
        rep = {"design": "sessions", "session": s, "sessions": 3, "repeats_per_session": 1}
        write_method(
            run_dir,
            f"baseline-s{s}",
            baseline=None,
            k=None,
            cells={("code", 1): [(tpot, 100.0 / s, {})]},
            texts={"code": {"a": ("t", "stop")}},
            replication={**rep, "of": "baseline"},
        )
        write_method(
            run_dir,
            f"ngram-s{s}",
            baseline="baseline",
            cells={("code", 1): [(tpot / 1.25, 130.0 / s, {"acc_len": 2.0})]},
            texts={"code": {"a": ("t", "stop")}},
            acceptance={"code": ACC},
            replication={**rep, "of": "ngram"},
            preemptions={("code", 1, 0): float(s)},
        )  # each session's own window (all named alike)
    report = build.build(run_dir, FixedTokenizers(WordTokenizer()), with_plots=False)
    assert [c["preemptions"] for c in report.cells if c["method"] == "ngram"] == [1.0, 2.0, 3.0]
    r = _row(report.speed, method="ngram", concurrency=1)
    assert r["design"] == "3 server sessions paired with the baseline's" and r["repeats"] == 3
    assert (r["tpot_speedup"], r["tpot_speedup_low"], r["tpot_speedup_high"]) == pytest.approx((1.25, 1.25, 1.25))
    assert r["throughput_speedup_low"] == pytest.approx(1.3) and r["verdict"] == "helped"
    unpaired = st.bootstrap_ratio(base_tpot, [t / 1.25 for t in base_tpot])  # what resampling each side would say
    assert unpaired.crosses_one
    md = render.render_markdown(sections.blocks(report))
    assert "Replication: 3 server sessions paired with the baseline's." in md
    assert "ngram-s1" not in [row["method"] for row in report.speed]


def test_host_load_per_core_is_the_highest_seen_at_the_cells_bench_windows(tmp_path):
    run_dir = tmp_path / "load"
    run_dir.mkdir()
    cells = {("code", 1): [(10.0, 100.0, {})] * 2, ("code", 4): [(10.0, 100.0, {})]}
    d = write_method(run_dir, "baseline", baseline=None, k=None, cells=cells, texts={"code": {"a": ("t", "stop")}})
    summary = json.loads((d / "summary.json").read_text())
    loads = {("code-c1-r0"): (1.0, 2.0), ("code-c1-r1"): (5.0, 3.0)}  # a busy neighbour during repeat 1
    for w in summary["windows"]:
        opened, closed = loads.get(w["name"].split("/")[1], (None, None))
        w["host_load"] = {"cores": 2, "open": opened, "close": closed}
    (d / "summary.json").write_text(json.dumps(summary))
    rep = build.build(run_dir, FixedTokenizers(WordTokenizer()), with_plots=False)
    assert _row(rep.speed, concurrency=1)["host_load_per_core"] == pytest.approx(2.5)
    assert _row(rep.speed, concurrency=4)["host_load_per_core"] is None  # not recorded: n/a, not 0


def _set_cpu(method_dir: Path, cpu: dict[str, tuple]) -> None:
    """Window.cpu of the named bench windows ({"code-c1-r0": (other CPU-s, bench CPU-s)}): 10 s on a 2-core host."""
    summary = json.loads((method_dir / "summary.json").read_text())
    for w in summary["windows"]:
        if w["name"].split("/")[1] in cpu:
            other, bench = cpu[w["name"].split("/")[1]]
            w["cpu"] = {
                "seconds": 10.0,
                "cores": 2,
                "server": 15.0,
                "bench": bench,
                "collector": 0.1,
                "other": other,
                "other_share": other / 20,
                "bench_share_of_core": bench / 10,
                "other_top": [],
                "ended": 0,
                "unreadable": 0,
            }
        w["host_load"] = {"cores": 2, "open": 3.8, "close": 3.9}  # 1.9 per core everywhere: no longer a mark
    (method_dir / "summary.json").write_text(json.dumps(summary))


def test_a_cell_measured_on_a_busy_host_is_marked_on_either_side(tmp_path):
    run_dir = tmp_path / "busy"
    run_dir.mkdir()
    cells = {
        ("code", 1): [(10.0, 100.0, {})] * 3,
        ("code", 2): [(10.0, 100.0, {})] * 3,
        ("code", 4): [(10.0, 100.0, {})] * 3,
        ("code", 8): [(10.0, 100.0, {})] * 3,
    }
    spec = {k: [(5.0, 200.0, {"acc_len": 2.0})] * 3 for k in cells}
    base = write_method(run_dir, "baseline", baseline=None, k=None, cells=cells, texts={"code": {"a": ("t", "stop")}})
    ngram = write_method(
        run_dir,
        "ngram",
        baseline="baseline",
        cells=spec,
        texts={"code": {"a": ("t", "stop")}},
        acceptance={"code": ACC},
    )
    # c=1: quiet on both sides; c=2: a neighbour took 30 % of the cores in one baseline repeat; c=4: nothing
    # recorded (an old bundle); c=8: the method's bench client saturated its core
    busy_s = 20 * st.MAX_OTHER_CPU_SHARE + 4.0
    _set_cpu(base, {"code-c1-r0": (0.2, 3.0), "code-c2-r1": (busy_s, 3.0), "code-c8-r0": (0.2, 5.0)})
    _set_cpu(ngram, {"code-c1-r0": (0.4, 3.0), "code-c2-r0": (0.2, 3.0), "code-c8-r2": (0.2, 9.7)})
    rep = build.build(run_dir, FixedTokenizers(WordTokenizer()), with_plots=False)
    quiet, busy, unknown, bound = (_row(rep.speed, method="ngram", concurrency=c) for c in (1, 2, 4, 8))
    assert quiet["host_busy"] is False and quiet["other_cpu_share"] == pytest.approx(0.02)
    assert quiet["host_load_per_core"] == pytest.approx(1.95)  # kept as data, decides nothing
    assert busy["host_busy"] is True and busy["other_cpu_s"] == pytest.approx(0.2)
    assert busy["baseline_other_cpu_share"] == pytest.approx(busy_s / 20)
    assert unknown["host_busy"] is None and unknown["client_bound"] is None and unknown["other_cpu_share"] is None
    assert bound["client_bound"] is True and bound["host_busy"] is False and quiet["client_bound"] is False
    md = render.render_markdown(sections.blocks(rep))
    matrix_row = next(line for line in md.splitlines() if line.startswith("| ngram |"))
    cells_md = [c.strip() for c in matrix_row.strip("|").split("|")]
    assert not any("busy host" in c or "client-bound" in c for c in (cells_md[2], cells_md[4]))
    assert cells_md[3].endswith(f"⚠ busy host (other processes {busy_s / 20:.0%} of the core-seconds)")
    assert cells_md[5].endswith("⚠ client-bound (bench client 97% of a core)") and "busy host" not in cells_md[5]
    assert f"more than {st.MAX_OTHER_CPU_SHARE:.0%} of the window's core-seconds" in md
    speed_rows = [line for line in md.splitlines() if line.startswith("| ngram | baseline | ")][1:]  # not the matrix
    assert "| 0.4 (2.0%) | 30% |" in speed_rows[0]  # other CPU-s (share), client share
    assert "| not measured | not measured |" in speed_rows[2]
    assert "| 0.2 (1.0%) | 97% ⚠ |" in speed_rows[3]


def test_a_methods_label_names_it_in_every_table_and_a_variant_keeps_its_own_name(tmp_path):
    run_dir = tmp_path / "labels"
    run_dir.mkdir()
    cells = {("code", 1): [(10.0, 100.0, {})]}
    write_method(run_dir, "baseline", baseline=None, k=None, cells=cells, texts={"code": {"a": ("t", "stop")}})
    for name, label in (("suffix", "suffix (prompt trees only)"), ("suffix-k4", "suffix (prompt trees only)")):
        d = write_method(
            run_dir,
            name,
            baseline="baseline",
            cells={("code", 1): [(5.0, 200.0, {"acc_len": 2.0})]},
            texts={"code": {"a": ("t", "stop")}},
            acceptance={"code": ACC},
        )
        summary = json.loads((d / "summary.json").read_text())
        summary["label"] = label
        (d / "summary.json").write_text(json.dumps(summary))
    rep = build.build(run_dir, FixedTokenizers(WordTokenizer()), with_plots=False)
    assert _row(rep.speed, method="suffix")["label"] == "suffix (prompt trees only)"
    assert _row(rep.speed, method="suffix-k4")["label"] == "suffix-k4"  # the label does not name it
    md = render.render_markdown(sections.blocks(rep))
    rows = [line for line in md.splitlines() if line.startswith("| suffix")]
    # methods, verdict, speed, latency, drafting cost, crossover, acceptance and equality tables: each names both
    assert [line.split("|")[1].strip() for line in rows].count("suffix (prompt trees only)") == 8, rows
    assert [line.split("|")[1].strip() for line in rows].count("suffix-k4") == 8
    assert not [line for line in rows if line.split("|")[1].strip() == "suffix"]


def test_a_burst_delivered_tpot_is_degenerate_and_the_verdict_rests_on_e2el(tmp_path):
    run_dir = tmp_path / "burst"
    run_dir.mkdir()
    # seen on 2 CPU cores: a starved client read whole answers at once, so bench's TPOT said 0.002 ms against
    # ~1 ms per token (48-token answers in ~70 ms)
    base = {("code", 1): [(0.002, 100.0, {}), (0.0025, 100.0, {}), (1.0, 100.0, {})]}
    spec = {("code", 1): [(1.0, 100.0, {"acc_len": 2.0})] * 3}
    write_method(run_dir, "baseline", baseline=None, k=None, cells=base, texts={"code": {"a": ("t", "stop")}})
    d = write_method(
        run_dir,
        "ngram",
        baseline="baseline",
        cells=spec,
        texts={"code": {"a": ("t", "stop")}},
        acceptance={"code": ACC},
    )
    for f in (d / "bench").glob("*.json"):  # the method's answers: 20 % shorter end to end
        data = json.loads(f.read_text())
        data["p50_e2el_ms"] = 80.0
        f.write_text(json.dumps(data))
    rep = build.build(run_dir, FixedTokenizers(WordTokenizer()), with_plots=False)
    cells = {(c["method"], c["repeat"]): c["tpot_degenerate"] for c in rep.cells}
    assert cells == {
        ("baseline", 0): True,
        ("baseline", 1): True,
        ("baseline", 2): False,
        ("ngram", 0): False,
        ("ngram", 1): False,
        ("ngram", 2): False,
    }
    r = _row(rep.speed, method="ngram")
    assert r["tpot_degenerate"] and r["latency_basis"] == "E2EL" and r["efficiency"] is None
    assert r["latency_speedup"] == pytest.approx(100.0 / 80.0) == r["e2el_speedup"]
    assert r["tpot_speedup"] is None and r["tpot_verdict"] == "degenerate: no ratio"  # never a ratio of a burst
    md = render.render_markdown(sections.blocks(rep))
    assert "0.00×" not in md and "| no ratio ‡ |" in md and "‡ TPOT degenerate" in md and "| 0.00 ‡ |" in md
    # the method's own TPOT is sound (only the baseline's was read in a burst): no ‡ on it, the note says whose
    assert r["tpot_degenerate_method"] is False and r["tpot_degenerate_baseline"] is True
    speed_line = next(line for line in md.splitlines() if line.startswith("| ngram | baseline | 1 |"))
    assert "| 1.00 | no ratio ‡ |" in speed_line
    assert (
        "TPOT degenerate on the baseline's side (by the aggregate rule: answers arrived in a burst): verdict on E2EL"
    ) in speed_line
    cross = next(
        line
        for line in md.splitlines()
        if line.startswith("| ngram | baseline |") and "E2EL" in line and "TPOT degenerate at every concurrency" in line
    )
    assert _row(rep.crossover, method="ngram")["latency_basis"] == "E2EL", cross
    matrix = next(line for line in md.splitlines() if line.startswith("| ngram | baseline |"))
    assert "· E2EL p50 1.25× [1.25–1.25] (mean 1.00×, p95 1.00×) ·" in matrix


def test_an_efficiency_above_the_bound_is_called_a_measurement_problem(tmp_path):
    run_dir = tmp_path / "above"
    run_dir.mkdir()
    base = {("chat", 1): [(10.0, 100.0, {"completed": 4, "out_tokens": 404})] * 3}
    # half the steps drafted, 2 tokens per pass at best, yet TPOT says 3x faster
    fast = {
        ("chat", 1): [
            (10.0 / 3, 150.0, {"completed": 4, "out_tokens": 404, "acc_len": 3.0, "drafts": 100, "accepted": 200})
        ]
        * 3
    }
    write_method(run_dir, "baseline", baseline=None, k=None, cells=base, texts={"chat": {"a": ("t", "stop")}})
    write_method(
        run_dir,
        "suffix",
        baseline="baseline",
        cells=fast,
        texts={"chat": {"a": ("t", "stop")}},
        acceptance={"chat": ACC},
    )
    r = _row(build.build(run_dir, FixedTokenizers(WordTokenizer()), with_plots=False).speed, method="suffix")
    assert r["efficiency"] == pytest.approx(1.5) and "efficiency above 100 %" in r["note"]


K_CONTRADICTION = (
    "asked for ngram with num_speculative_tokens=4 (services/methods.toml), but the server at "
    "http://127.0.0.1:8000 drafts K=2 (vllm:spec_decode_num_accepted_tokens_per_pos has 2 positions)"
)


def test_a_method_measured_despite_a_contradicting_server_is_marked_wherever_it_is_read(bundle):
    contradict(bundle, "ngram", [K_CONTRADICTION, "a second contradiction"])
    md = build.write_report(bundle, FixedTokenizers(WordTokenizer())).read_text()
    warning = (
        f"⚠ ngram: measured with --trust-server although the server contradicted the method: "
        f"{K_CONTRADICTION}; a second contradiction. Its figures are what that server ran, not what ngram "
        "asks for."
    )
    lines = md.splitlines()
    matrix = next(i for i, line in enumerate(lines) if line.startswith("| ngram ⚠ --trust-server | baseline |"))
    assert lines.index(f"- {warning}") < matrix  # above the verdicts it qualifies
    cells = [c.strip() for c in lines[matrix].strip("|").split("|")][2:]
    assert len(cells) == 4 and all(c.endswith("⚠ --trust-server") for c in cells)
    # every table names it with the mark; the method measured as asked carries none
    assert sum(line.startswith("| ngram ⚠ --trust-server |") for line in lines) >= 6
    assert not any("trust-server" in line for line in lines if line.startswith("| draft_model"))
    methods = pd.read_csv(bundle / "report" / "tables" / "methods.csv").set_index("method")
    assert methods.loc["ngram", "server_contradictions"] == f"{K_CONTRADICTION}; a second contradiction"
    assert bool(methods.loc["ngram", "server_contradicted"]) and not methods.loc["draft_model", "server_contradicted"]


def test_acceptance_when_sampling_is_a_table_beside_the_greedy_figures(bundle):
    path = bundle / "ngram" / "summary.json"
    s = json.loads(path.read_text())
    s["tasks"]["code"]["sampled"] = {
        "1": {
            "temperature": 1.0,
            "status": "ok",
            "acceptance_rate": 0.25,
            "mean_acceptance_length": 2.0,
            "histogram": [2, 1, 0, 0, 1],
            "num_spec_steps": 4,
            "num_draft_tokens": 16,
            "num_accepted_draft_tokens": 4,
            "no_accept_share": 0.5,
        },
        "0.6": {
            "temperature": 0.6,
            "status": "ok",
            "acceptance_rate": 0.5,
            "mean_acceptance_length": 3.0,
            "histogram": [1, 0, 1, 1, 1],
            "num_spec_steps": 4,
            "num_draft_tokens": 16,
            "num_accepted_draft_tokens": 8,
            "no_accept_share": 0.25,
        },
    }
    path.write_text(json.dumps(s))
    rep = build.build(bundle, FixedTokenizers(WordTokenizer()), with_plots=False)
    rows = [r for r in rep.sampled if r["method"] == "ngram"]
    assert [r["temperature"] for r in rows] == [0.6, 1.0]  # in temperature order
    greedy = _row(rep.acceptance, method="ngram", task="code")
    assert all(r["greedy_acceptance_rate"] == greedy["acceptance_rate"] for r in rows)
    assert rows[1]["acceptance_rate"] == 0.25 and rep.tables()["acceptance_sampled"] == rep.sampled
    md = render.render_markdown(sections.blocks(rep))
    assert md.count("Acceptance when sampling") == 1  # code only: chat was not sampled
    table = md.split("Acceptance when sampling", 1)[1].split("###", 1)[0]
    assert "| ngram | 4 | 1 | 25.0 % | 50.0 % | 2.00 | 3.00 | 50.0 % | [2, 1, 0, 0, 1] | 4 | 16 | 4 | ok |" in table
    assert "baseline" not in table  # plain decode drafts nothing: no row


def _category(requests, steps, drafts, accepted, hist, positions):
    return {
        "requests": requests,
        "num_spec_steps": steps,
        "num_draft_tokens": drafts,
        "num_accepted_draft_tokens": accepted,
        "acceptance_rate": accepted / drafts if drafts else None,
        "mean_acceptance_length": 1 + accepted / steps if steps else None,
        "histogram": hist,
        "per_position": positions,
        "per_position_conditional": None,
        "no_accept_share": None,
    }


def test_acceptance_by_category_is_a_table_whose_rows_are_the_windows_split(bundle):
    path = bundle / "ngram" / "summary.json"
    s = json.loads(path.read_text())
    s["tasks"]["code"]["categories"] = {
        "coding": _category(2, 5, 20, 9, [0, 1, 4, 0, 0], [1.0, 0.8, 0, 0]),
        "writing": _category(2, 6, 24, 1, [5, 1, 0, 0, 0], [1 / 6, 0, 0, 0]),
    }
    s["tasks"]["code"]["sampled"] = {
        "1": {
            "temperature": 1.0,
            "status": "ok",
            "categories": {"coding": _category(2, 4, 16, 2, [2, 2, 0, 0, 0], [0.5, 0, 0, 0])},
        }
    }
    path.write_text(json.dumps(s))
    rep = build.build(bundle, FixedTokenizers(WordTokenizer()), with_plots=False)
    rows = [(r["phase"], r["category"], r["acceptance_rate"]) for r in rep.categories if r["method"] == "ngram"]
    assert rows == [("greedy", "coding", 9 / 20), ("greedy", "writing", 1 / 24), ("t1", "coding", 2 / 16)]
    assert rep.tables()["acceptance_by_category"] == rep.categories
    md = render.render_markdown(sections.blocks(rep))
    assert md.count("Acceptance by category") == 1  # chat has no categories: no table
    table = md.split("Acceptance by category", 1)[1].split("###", 1)[0]
    assert (
        "| ngram | 4 | coding | 2 | 45.0 % | 2.80 |" in table and "| ngram | 4 | writing | 2 | 4.2 % | 1.17 |" in table
    )
    assert "t1" not in table and "sum to the task's" in table  # greedy only here; the split explained


def test_goodput_is_a_table_per_task_beside_bench_own_figure(bundle):
    path = bundle / "ngram" / "summary.json"
    s = json.loads(path.read_text())
    for cell in s["tasks"]["code"]["bench"]:
        cell["goodput"] = {
            "slo": {"ttft": 500.0, "tpot": 50.0},
            "good": 6,
            "completed": 8,
            "share": 0.75,
            "goodput": 0.6,
            "bench_request_goodput": 0.6,
        }
    path.write_text(json.dumps(s))
    rep = build.build(bundle, FixedTokenizers(WordTokenizer()), with_plots=False)
    rows = [c for c in rep.cells if c["method"] == "ngram" and c["task"] == "code"]
    assert rows and all((c["good_requests"], c["goodput_share"], c["request_goodput"]) == (6, 0.75, 0.6) for c in rows)
    md = render.render_markdown(sections.blocks(rep))
    assert md.count("Goodput under the SLO (ttft ≤ 500 ms, tpot ≤ 50 ms, per request)") == 1  # code only
    table = md.split("Goodput under the SLO", 1)[1].split("###", 1)[0]
    assert "| ngram | c=1 | 0 | 6 / 8 | 75.0 % | 0.600 | 0.600 |" in table


def test_acceptance_per_turn_is_a_table_of_turn_1_beside_turn_2(bundle):
    path = bundle / "ngram" / "summary.json"
    s = json.loads(path.read_text())
    s["tasks"]["code"]["turns"] = {
        "2": {
            "turn": 2,
            "status": "ok",
            "requests": 3,
            "left_out": 1,
            "file": "inputs/code.turn2.baseline.jsonl",
            "sha256": "ab" * 32,
            "answers_from": "baseline",
            **_category(3, 5, 20, 5, [2, 1, 1, 1, 0], [0.6, 0.4, 0.2, 0]),
            "categories": {"coding": _category(3, 5, 20, 5, [2, 1, 1, 1, 0], [0.6, 0.4, 0.2, 0])},
        }
    }
    path.write_text(json.dumps(s))
    rep = build.build(bundle, FixedTokenizers(WordTokenizer()), with_plots=False)
    rows = [(r["turn"], r["requests"], r["acceptance_rate"]) for r in rep.turns if r["method"] == "ngram"]
    greedy = _row(rep.acceptance, method="ngram", task="code")
    assert rows == [(1, greedy["requests"], greedy["acceptance_rate"]), (2, 3, 0.25)]
    assert rep.tables()["acceptance_by_turn"] == rep.turns
    assert [(r["phase"], r["category"]) for r in rep.categories if r["method"] == "ngram"] == [("turn2", "coding")]
    md = render.render_markdown(sections.blocks(rep))
    assert md.count("Acceptance per turn") == 1  # chat has no turn 2: no table
    table = md.split("Acceptance per turn", 1)[1].split("###", 1)[0]
    assert "| ngram | 4 | 2 | 3 | 25.0 % | 2.00 |" in table and "1 row(s) without a second turn" in table
