"""The minimal reproduction of docs/sampler-cpu-bug.md, on the installed vLLM: the bug is present on vLLM
0.32.0's CPU build (an upgrade that fixes it makes this test fail, so that the docs and the report's label are
revisited), and the fix given there removes it."""

import pytest

from specstack.probes import expand_repro

pytestmark = pytest.mark.config


def _cpu_0_32():
    import vllm
    from vllm.platforms import current_platform

    return current_platform.device_type == "cpu" and vllm.__version__.startswith("0.32.0")


def test_expand_returns_other_values_than_the_requests_temperatures_on_vllm_0_32_cpu():
    r = expand_repro.reproduce()
    assert r["expected"] == pytest.approx([0.7, 0.7, 0.5, 0.5, 0.5, 1.3])
    # on a vLLM that fixed it this fails: revisit docs/sampler-cpu-bug.md and the report's label
    assert r["bug"] is _cpu_0_32(), r


def test_the_documented_fix_gives_the_requests_values():
    with expand_repro.fixed_expand():
        r = expand_repro.reproduce()
    assert not r["bug"] and r["got"] == pytest.approx(r["expected"])


def test_the_reproduction_script_exits_1_while_the_bug_is_there(capsys):
    code = expand_repro.main()
    out = capsys.readouterr().out
    assert ("BUG" in out) is (code == 1)
    assert code == (1 if _cpu_0_32() else 0)
