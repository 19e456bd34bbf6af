"""A greedy divergence's tie is judged at the resolution of the dtype the baseline served in (its `--dtype`
serve argument): the trained set served in float32 on the H200 (docs/gpu.md, fifth run) diverged at gaps of
1e-5 to 2e-4 nats, which bf16's words ("two bf16 steps") would misname. The rating itself: tests/figures/
test_equality.py."""

from __future__ import annotations

import pytest

from specstack.report.output_sections import _gap, tie_note
from specstack.results.summary import Server

pytestmark = pytest.mark.unit

BF16_NOTE = (
    "An exact tie (gap 0: the same bf16 logit) or a near tie (gap <= 0.25 nats, two bf16 steps of a logit "
    "between 16 and 32)"
)


@pytest.mark.parametrize(
    "argv, dtype",
    [
        (["vllm", "serve", "/m", "--dtype", "float32", "--port", "8000"], "float32"),
        (["vllm", "serve", "/m", "--dtype=half"], "half"),
        (["vllm", "serve", "/m"], None),  # vLLM's default (auto): not recorded
        (None, None),  # an attached server: no serve arguments
    ],
)
def test_the_served_dtype_is_read_from_the_serve_arguments(argv, dtype):
    assert Server.from_json({"target": "/m", **({"argv": argv} if argv else {})}).dtype == dtype


def test_the_gap_note_speaks_of_the_dtype_the_baselines_served_in():
    bf16 = tie_note([{"dtype": "bfloat16"}, {"dtype": "bf16"}])
    assert BF16_NOTE in bf16 and "fp32" not in bf16
    fp32 = tie_note([{"dtype": "float32"}])
    assert "fp32 0.001 nats" in fp32 and "bf16" not in fp32
    mixed = tie_note([{"dtype": "float32"}, {"dtype": "bfloat16"}])
    assert "bf16 0.25 nats; fp32 0.001 nats" in mixed
    assert "bf16 (assumed: dtype not recorded) 0.25 nats" in tie_note([{"dtype": None}])


def test_a_gap_below_a_thousandth_of_a_nat_is_not_printed_as_zero():
    row = {"divergence_kind": "near tie", "divergence_gap_nats": 1.33514404296875e-05, "divergence_cause": None}
    assert _gap(row) == "1.3e-05 (near tie)"
    assert _gap({**row, "divergence_gap_nats": 0.0}) == "0.000 (near tie)"
    assert _gap({**row, "divergence_gap_nats": 0.125}) == "0.125 (near tie)"
