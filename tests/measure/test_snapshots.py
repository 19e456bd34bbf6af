"""Snapshot parsing and diffs on exposition text rendered by prometheus_client itself."""

import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest

from specstack.config import metric_names as m
from specstack.measure import snapshots
from specstack.measure.snapshots import ServerRestarted, Snapshot, diff, filter_exposition, parse

pytestmark = pytest.mark.unit


def exposition(engines: dict[str, dict], start_time: float = 1000.0, noise: int = 50) -> str:
    """A /metrics page shaped like vLLM's: spec counters per engine, per position, plus unrelated families."""
    reg = CollectorRegistry()
    labels = ["model_name", "engine"]
    drafts = Counter("vllm:spec_decode_num_drafts", "d", labels, registry=reg)
    tokens = Counter("vllm:spec_decode_num_draft_tokens", "t", labels, registry=reg)
    acc = Counter("vllm:spec_decode_num_accepted_tokens", "a", labels, registry=reg)
    pos = Counter("vllm:spec_decode_num_accepted_tokens_per_pos", "p", labels + ["position"], registry=reg)
    success = Counter("vllm:request_success", "s", labels + ["finished_reason"], registry=reg)
    Gauge("process_start_time_seconds", "st", registry=reg).set(start_time)
    Gauge("vllm:cache_config_info", "c", ["engine", "block_size", "num_gpu_blocks"], registry=reg).labels(
        "0", "16", "1234"
    ).set(1)
    # Families whose names share a prefix with kept ones must not leak in.
    Counter("vllm:prompt_tokens_cached", "x", labels, registry=reg).labels("spec-demo", "0").inc(999)
    for i in range(noise):
        Counter(f"vllm:unrelated_{i}", "u", labels, registry=reg).labels("spec-demo", "0").inc(i)
    for engine, v in engines.items():
        drafts.labels("spec-demo", engine).inc(v["drafts"])
        tokens.labels("spec-demo", engine).inc(v["tokens"])
        acc.labels("spec-demo", engine).inc(sum(v["pos"]))
        for p, n in enumerate(v["pos"]):
            pos.labels("spec-demo", engine, str(p)).inc(n)
        success.labels("spec-demo", engine, "length").inc(v.get("length", 0))
    return generate_latest(reg).decode()


def test_sums_over_engines_and_splits_by_position():
    snap = parse(
        exposition(
            {
                "0": dict(drafts=10, tokens=40, pos=[8, 5, 2, 1], length=3),
                "1": dict(drafts=5, tokens=20, pos=[4, 2, 0, 0], length=2),
            }
        )
    )
    assert snap.counters[m.SPEC_NUM_DRAFTS] == 15
    assert snap.counters[m.SPEC_NUM_DRAFT_TOKENS] == 60
    assert snap.counters[m.SPEC_NUM_ACCEPTED_TOKENS] == 22
    assert snap.split[m.SPEC_ACCEPTED_PER_POS] == {"0": 12, "1": 7, "2": 2, "3": 1}
    assert snap.split[m.REQUEST_SUCCESS] == {"length": 5}
    assert snap.cache_config["num_gpu_blocks"] == "1234"
    assert snap.process_start == 1000.0
    assert m.PROMPT_TOKENS not in snap.counters  # vllm:prompt_tokens_cached is another family
    assert snap.has_spec


def test_filter_keeps_only_needed_families():
    text = exposition({"0": dict(drafts=1, tokens=4, pos=[1, 0, 0, 0])}, noise=200)
    kept = filter_exposition(text)
    assert "vllm:unrelated_" not in kept and "vllm:prompt_tokens_cached" not in kept
    assert "vllm:spec_decode_num_drafts_total" in kept
    assert len(kept) < len(text) / 5


def test_diff_is_after_minus_before():
    before = parse(exposition({"0": dict(drafts=10, tokens=40, pos=[8, 5, 2, 1])}), taken_at=1.0)
    after = parse(exposition({"0": dict(drafts=13, tokens=52, pos=[10, 6, 2, 1])}), taken_at=3.5)
    d = diff(before, after)
    assert (d.get(m.SPEC_NUM_DRAFTS), d.get(m.SPEC_NUM_DRAFT_TOKENS), d.get(m.SPEC_NUM_ACCEPTED_TOKENS)) == (3, 12, 3)
    assert d.per_position() == [2, 1, 0, 0]
    assert d.seconds == 2.5


def test_counter_that_went_down_means_restart():
    before = parse(exposition({"0": dict(drafts=10, tokens=40, pos=[8, 5, 2, 1])}))
    after = parse(exposition({"0": dict(drafts=2, tokens=8, pos=[1, 0, 0, 0])}))
    with pytest.raises(ServerRestarted, match="went down"):
        diff(before, after)


def test_new_process_start_time_means_restart_even_if_counters_grew():
    before = parse(exposition({"0": dict(drafts=1, tokens=4, pos=[1, 0, 0, 0])}, start_time=1000))
    after = parse(exposition({"0": dict(drafts=50, tokens=200, pos=[9, 0, 0, 0])}, start_time=2000))
    with pytest.raises(ServerRestarted, match="process start time"):
        diff(before, after)


def test_baseline_page_has_no_spec_counters():
    reg = CollectorRegistry()
    Counter("vllm:generation_tokens", "g", ["model_name", "engine"], registry=reg).labels("spec-demo", "0").inc(7)
    snap = parse(generate_latest(reg).decode())
    assert not snap.has_spec
    assert snap.counters[m.GENERATION_TOKENS] == 7


def _reading(drafts: int) -> Snapshot:
    return parse(exposition({"0": {"drafts": drafts, "tokens": 0, "pos": [0]}}))


@pytest.mark.parametrize(
    ("pages", "fetches"),
    [
        ([5, 5, 5], 1),  # agrees with the last close at once: nothing ran since
        ([6, 7, 7], 3),  # counters moved since (a request between windows): settled as without `last`
    ],
)
def test_a_reading_that_agrees_with_the_last_settled_one_is_settled(monkeypatch, pages, fetches):
    readings = iter([_reading(n) for n in pages])
    monkeypatch.setattr(snapshots, "fetch", lambda *a, **k: next(readings))
    snap = snapshots.settled("http://x", interval=0.0, last=_reading(5))
    assert snap.counters[m.SPEC_NUM_DRAFTS] == pages[fetches - 1] and snap.fetches == fetches


def test_without_last_two_readings_must_agree(monkeypatch):
    readings = iter([_reading(5), _reading(5)])
    monkeypatch.setattr(snapshots, "fetch", lambda *a, **k: next(readings))
    assert snapshots.settled("http://x", interval=0.0).fetches == 2


def _finished(drafts: int, length: int, start_time: float = 1000.0) -> Snapshot:
    return parse(exposition({"0": {"drafts": drafts, "tokens": 0, "pos": [0], "length": length}}, start_time))


@pytest.mark.parametrize(
    ("pages", "answered", "fetches"),
    [
        ([(9, 4), (9, 4)], 4, 1),  # every request the window saw answered is counted finished: settled at once
        ([(8, 3), (9, 4), (9, 4)], 4, 3),  # the last one not counted yet: two readings must agree, as before
        ([(9, 5), (9, 5)], 4, 2),  # one more finished than answered (not this window's): two readings
    ],
)
def test_a_close_that_counts_every_answered_request_finished_is_settled(monkeypatch, pages, answered, fetches):
    readings = iter([_finished(d, n) for d, n in pages])
    monkeypatch.setattr(snapshots, "fetch", lambda *a, **k: next(readings))
    snap = snapshots.settled("http://x", interval=0.0, finishes=(_finished(2, 0), answered))
    assert snap.fetches == fetches and snap.counters[m.SPEC_NUM_DRAFTS] == pages[fetches - 1][0]


def test_a_restarted_server_is_never_settled_by_its_finished_count(monkeypatch):
    readings = iter([_finished(9, 4, start_time=2000.0), _finished(9, 4, start_time=2000.0)])
    monkeypatch.setattr(snapshots, "fetch", lambda *a, **k: next(readings))
    assert snapshots.settled("http://x", interval=0.0, finishes=(_finished(2, 0), 4)).fetches == 2
