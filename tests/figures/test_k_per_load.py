"""K per load (figures/k_per_load.py) on constructed sweeps: each of vLLM tune_speculative_k's rules on its own
(median over repeats, the MAD-based conservative figure, the stability gate, ties to the smaller K, K=0 where
nothing pays) and the schedule it makes; the report's table: tests/report/test_k_per_load.py."""

from __future__ import annotations

import pytest

from specstack.figures import k_per_load as kpl

pytestmark = pytest.mark.unit


def cells(spec: dict) -> list[dict]:
    """{(K, c): [tok/s per repeat]} -> sweep cells (None = a failed repeat)."""
    return [
        {"k": k, "concurrency": c, "repeat": r, "output_throughput": v, "ok": v is not None}
        for (k, c), values in spec.items()
        for r, v in enumerate(values)
    ]


def band(rows: list[dict], c: int) -> dict:
    return next(r for r in rows if r["concurrency"] == c)


def test_the_figure_is_the_median_over_repeats_not_the_mean():
    rows = kpl.bands(cells({(0, 1): [100, 100, 100], (2, 1): [150, 151, 400]}))  # one outlier repeat
    b = band(rows, 1)
    assert b["k"] == 2 and b["median_tok_s"] == 151 and b["speedup"] == pytest.approx(1.51)
    # MAD of (150, 151, 400) around 151 is 1: the outlier does not trip the gate
    assert b["relative_mad"] == pytest.approx(1 / 151)


def test_a_spread_k_is_judged_by_its_conservative_figure():
    """median − 1.4826 × MAD: K=4's higher median but wider spread (still under the gate) loses to steady K=2."""
    rows = kpl.bands(cells({(0, 1): [100] * 3, (2, 1): [120] * 3, (4, 1): [114, 122, 130]}))
    b = band(rows, 1)
    k4 = next(x for x in b["candidates"] if x["k"] == 4)
    assert k4["gate"] == "ok" and k4["median_tok_s"] == 122
    assert k4["conservative_tok_s"] == pytest.approx(122 - 1.4826 * 8)
    assert b["k"] == 2 and b["ties"] == [2]


def test_the_gate_rejects_an_unstable_k_and_then_no_schedule_is_made():
    rows = kpl.bands(
        cells(
            {
                (0, 1): [100] * 3,
                (2, 1): [110] * 3,
                (4, 1): [100, 160, 220],
                (0, 4): [300] * 3,
                (2, 4): [290] * 3,
                (4, 4): [280] * 3,
            }
        )
    )
    b = band(rows, 1)
    k4 = next(x for x in b["candidates"] if x["k"] == 4)
    assert k4["gate"] == "unstable: relative MAD 0.375 > 0.10"  # MAD 60 around 160
    assert b["k"] == 2  # the unstable K's 1.6× is not taken
    sched, why = kpl.schedule(rows)
    assert sched is None and why == "the stability gate rejected K=4 c=1 (unstable: relative MAD 0.375 > 0.10)"


def test_too_few_repeats_and_a_failed_repeat_fail_the_gate():
    rows = kpl.bands(cells({(0, 1): [100] * 3, (2, 1): [150, 150], (3, 1): [150, 150, None]}))
    gates = {x["k"]: x["gate"] for x in band(rows, 1)["candidates"]}
    assert gates == {0: "ok", 2: f"2 repeat(s) < {kpl.MIN_RUNS}", 3: "1 repeat(s) failed"}
    assert band(rows, 1)["k"] == 0


def test_ties_within_one_percent_go_to_the_smaller_k():
    rows = kpl.bands(cells({(0, 1): [100] * 3, (2, 1): [130] * 3, (3, 1): [131] * 3, (4, 1): [129.8] * 3}))
    b = band(rows, 1)
    assert b["ties"] == [2, 3, 4] and b["k"] == 2
    rows = kpl.bands(cells({(0, 1): [100] * 3, (2, 1): [130] * 3, (3, 1): [140] * 3}))
    assert band(rows, 1)["k"] == 3 and band(rows, 1)["ties"] == [3]  # 130/140 is not within 1 %


def test_k0_where_speculation_never_pays_by_more_than_the_tolerance():
    rows = kpl.bands(
        cells(
            {
                (0, 1): [100] * 3,
                (2, 1): [100.5] * 3,
                (4, 1): [90] * 3,
                (0, 2): [180] * 3,
                (2, 2): [150] * 3,
                (4, 2): [120] * 3,
            }
        )
    )
    assert [band(rows, c)["k"] for c in (1, 2)] == [0, 0]
    sched, why = kpl.schedule(rows)
    assert why is None and sched == [[1, 2, 0]]
    assert kpl.verdict(sched).startswith("K=0 at every load") and not kpl.runnable(sched)
    assert kpl.best_fixed_k(rows) == 2  # the least bad fixed K still exists, for comparison


def test_the_schedule_bands_merge_and_become_a_spec_override():
    rows = kpl.bands(
        cells(
            {
                (0, 1): [100] * 3,
                (2, 1): [140] * 3,
                (4, 1): [160] * 3,
                (0, 2): [180] * 3,
                (2, 2): [230] * 3,
                (4, 2): [235] * 3,
                (0, 4): [300] * 3,
                (2, 4): [330] * 3,
                (4, 4): [290] * 3,
                (0, 8): [500] * 3,
                (2, 8): [480] * 3,
                (4, 8): [400] * 3,
            }
        )
    )
    assert [band(rows, c)["k"] for c in (1, 2, 4, 8)] == [4, 4, 2, 0]
    assert [band(rows, c)["band"] for c in (1, 2, 4, 8)] == [[1, 1], [2, 3], [4, 7], [8, 8]]
    sched, why = kpl.schedule(rows)
    assert why is None and sched == [[1, 3, 4], [4, 7, 2], [8, 8, 0]]
    assert kpl.runnable(sched) and kpl.verdict(sched) == "a different K per load"
    assert kpl.spec_override(sched) == {"num_speculative_tokens": 4, "num_speculative_tokens_per_batch_size": sched}
    # the best one K over all loads: geometric mean of the speedups, K=2 (1.4·1.28·1.1·0.96) over K=4
    assert kpl.best_fixed_k(rows) == 2


def test_vllm_validates_the_schedule_it_would_be_given():
    """The schedule passes vLLM 0.32.0's own validator for num_speculative_tokens_per_batch_size."""
    from vllm.v1.spec_decode.dynamic.utils import build_dynamic_sd_schedule_lookup

    rows = kpl.bands(cells({(0, 1): [100] * 3, (3, 1): [160] * 3, (0, 4): [300] * 3, (3, 4): [250] * 3}))
    sched, _ = kpl.schedule(rows)
    override = kpl.spec_override(sched)
    lookup = build_dynamic_sd_schedule_lookup(
        sched, vllm_max_batch_size=8, vllm_num_speculative_tokens=override["num_speculative_tokens"]
    )
    assert lookup[1:] == [3, 3, 3, 0, 0, 0, 0, 0]


def test_no_schedule_without_concurrency_1_or_with_other_ks_per_concurrency():
    rows = kpl.bands(cells({(0, 2): [100] * 3, (2, 2): [150] * 3}))
    assert kpl.schedule(rows) == (None, "the sweep has no concurrency 1: a schedule must start at batch size 1")
    rows = kpl.bands(cells({(0, 1): [100] * 3, (2, 1): [150] * 3, (0, 2): [100] * 3, (4, 2): [150] * 3}))
    assert kpl.schedule(rows)[1] == "the concurrencies were not all measured at the same K values"
    rows = kpl.bands(cells({(2, 1): [150] * 3}))
    assert band(rows, 1)["k"] is None and band(rows, 1)["why_none"] == "no baseline (K=0) cells"
