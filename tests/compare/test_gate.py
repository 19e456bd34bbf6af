"""--fail-on: parsing, the default direction, and the user errors that name the fix."""

from __future__ import annotations

import pytest

from specstack.cli.main import main
from specstack.compare import gate

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    "spec,says",
    [
        ("acceptance_lenght:-2%", "unknown metric 'acceptance_lenght'"),
        ("acceptance_length:-2", "is not METRIC:±X%"),
        ("acceptance_length", "is not METRIC:±X%"),
        ("throughput:0%", "has no direction"),
    ],
)
def test_bad_thresholds_are_user_errors_naming_the_fix(run_a, spec, says, capsys):
    assert main(["compare", str(run_a), str(run_a), "--fail-on", spec]) == 2
    err = capsys.readouterr().err
    assert says in err and "--fail-on" in err and "Traceback" not in err


def test_threshold_direction_defaults_to_the_worse_one():
    t = {x.metric: x.percent for x in gate.parse("acceptance_length:2%,tpot_p99:5%, throughput:+1.5%")}
    assert t == {"acceptance_length": -2.0, "tpot_p99": 5.0, "throughput": 1.5}
