"""Goodput under per-request targets (--slo): parsing, bench's arguments, the arithmetic on constructed cells
whose answer is known, and the cross-check against bench's own figure."""

import pytest

from specstack.errors import UserError
from specstack.measure.goodput import bench_args, crosscheck, figures, parse_slo

pytestmark = pytest.mark.unit


def cell(ttfts, latencies, lens, errors=None, duration=10.0, request_goodput=None):
    errors = errors or [""] * len(ttfts)
    return {
        "ttfts": ttfts,
        "latencies": latencies,
        "output_lens": lens,
        "errors": errors,
        "duration": duration,
        "completed": sum(1 for e, n in zip(errors, lens) if not e and n),
        "request_goodput": request_goodput,
    }


def test_slo_parses_targets_in_ms():
    assert parse_slo("ttft:500,tpot:50") == {"ttft": 500.0, "tpot": 50.0}
    assert parse_slo(" e2el_ms:2000 ") == {"e2el": 2000.0}
    assert bench_args({"ttft": 500.0, "tpot": 50.0}) == ["--goodput", "ttft:500", "tpot:50"]
    assert bench_args(None) == []


@pytest.mark.parametrize(
    "text, says",
    [
        ("itl:5", "KEY:MILLISECONDS with KEY one of ttft, tpot, e2el"),
        ("ttft=500", "is not KEY:MILLISECONDS"),
        ("ttft:fast", "not a number"),
        ("ttft:0", "positive"),
        ("ttft:-1", "positive"),
        ("ttft:1,ttft:2", "twice"),
        ("", "at least one target"),
    ],
)
def test_bad_slo_is_refused_with_the_form_that_works(text, says):
    with pytest.raises(UserError, match="--slo") as e:
        parse_slo(text)
    assert says in str(e.value)


def test_a_request_is_good_only_when_it_meets_every_target():
    # 4 answers of 11 tokens: TPOT = (E2EL - TTFT) / 10
    c = cell(ttfts=[0.1, 0.1, 0.6, 0.1], latencies=[0.6, 1.1, 0.7, 0.4], lens=[11, 11, 11, 11])
    # tpot: 50 ms, 100 ms, 10 ms, 30 ms; ttft 100, 100, 600, 100 ms
    f = figures(c, {"ttft": 500.0, "tpot": 50.0})
    assert (f["good"], f["completed"], f["share"], f["goodput"]) == (2, 4, 0.5, 0.2)  # 1st (on the edge), 4th


def test_failed_requests_are_neither_completed_nor_good_and_one_token_answers_have_no_tpot():
    c = cell(ttfts=[0.0, 0.1, 0.2], latencies=[0.0, 0.1, 0.3], lens=[0, 1, 2], errors=["timeout", "", ""])
    f = figures(c, {"tpot": 50.0})
    assert (f["completed"], f["good"]) == (2, 1)  # the 1-token answer's TPOT is 0; the 2-token one's 100 ms


def test_the_crosscheck_agrees_with_the_same_figure_and_flags_another():
    c = cell(ttfts=[0.1, 0.9], latencies=[0.2, 1.0], lens=[3, 3], duration=4.0, request_goodput=0.25)
    checks = crosscheck(c, {"ttft": 500.0})
    assert [c.ok for c in checks] == [True, True]
    c["request_goodput"] = 0.5
    bad = crosscheck(c, {"ttft": 500.0})[1]
    assert not bad.ok and (bad.expected, bad.actual) == (0.25, 0.5) and "measure/goodput.py" in bad.hint


def test_a_cell_without_per_request_results_is_a_failed_check_not_a_silent_gap():
    (check,) = crosscheck({"completed": 2, "request_goodput": 0.1, "duration": 1.0}, {"ttft": 500.0})
    assert not check.ok and "--save-detailed" in check.hint
    assert crosscheck({"completed": 2}, None) == []
