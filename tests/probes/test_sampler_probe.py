"""The sampler probe on the installed vLLM's real rejection-sampling code (no mock, no model, no server).

On vLLM 0.32.0's CPU build the engine's sampler is biased (docs/sampler-cpu-bug.md): the probe must fail the
sampled shapes, name the cause, and pass the greedy ones. With the one broken function replaced by a correct
expand (the fix the docs give) every shape must pass with the power it states: the probe raises no false
alarm on a correct sampler. Breaking the sampler another way must be caught too.
"""

import json

import pytest

from specstack.probes import expand_repro, sampler

pytestmark = pytest.mark.config


def _cpu_0_32():
    import vllm
    from vllm.platforms import current_platform

    return current_platform.device_type == "cpu" and vllm.__version__.startswith("0.32.0")


@pytest.fixture(scope="module")
def engine():
    return sampler.Engine()


@pytest.fixture(scope="module")
def as_installed(engine):
    return sampler.run_probe(engine=engine)


@pytest.fixture(scope="module")
def with_fixed_expand(engine):
    with expand_repro.fixed_expand():
        return sampler.run_probe(engine=engine)


def _by_name(report):
    return {e["shape"]["name"]: e for e in report["shapes"]}


def test_the_installed_sampler_gets_the_verdict_known_for_its_platform(as_installed):
    shapes = _by_name(as_installed)
    greedy = [n for n, e in shapes.items() if e["shape"]["temperature"] == 0]
    assert greedy and all(shapes[n]["verdict"] == "pass" for n in greedy), [shapes[n]["failures"] for n in greedy]
    sampled = [n for n in shapes if n not in greedy]
    if _cpu_0_32():  # the known bug: every sampled shape fails, and the probe says why
        assert as_installed["verdict"] == "fail"
        assert sorted(as_installed["failing_shapes"]) == sorted(sampled)
        assert "expand_batch_to_tokens(temperature)" in as_installed["cause"]
        for name in sampled:
            assert any(c.startswith("expand_batch_to_tokens(temperature)") for c in shapes[name]["cause"]), name
    else:  # CUDA (Triton kernels), or a CPU build with the fix
        assert as_installed["verdict"] == "pass", as_installed["failing_shapes"]


def test_a_correct_expand_makes_every_shape_pass_with_the_stated_power(with_fixed_expand):
    r = with_fixed_expand
    assert r["verdict"] == "pass", [(e["shape"]["name"], e["failures"]) for e in r["shapes"] if e["failures"]]
    assert r["cause"] is None
    stats = r["statistics"]
    assert stats["min_power"] >= sampler.MIN_POWER and stats["tests"] >= 100
    tested = [t for e in r["shapes"] for t in e["tests"] if t["p"] is not None]
    assert {t["kind"] for t in tested} == {"distribution", "acceptance"}
    # every sampled shape has its first position tested, so no shape passes by being untested
    for e in r["shapes"]:
        if e["shape"]["temperature"] > 0:
            assert {(t["kind"], t["position"]) for t in e["tests"] if t["p"] is not None} >= {
                ("distribution", 0),
                ("acceptance", 0),
            }, e["shape"]["name"]


def test_a_sampler_that_ignores_top_k_and_top_p_is_caught(engine, monkeypatch):
    shapes = tuple(s for s in sampler.SHAPES if s.top_k or s.top_p)
    monkeypatch.setattr(engine.rs, "apply_top_k_top_p", lambda logits, k, p: logits)
    with expand_repro.fixed_expand():
        r = sampler.run_probe(shapes, engine=engine)
    assert r["verdict"] == "fail" and sorted(r["failing_shapes"]) == sorted(s.name for s in shapes)
    assert r["cause"].startswith("unexplained")
    assert all("outside the support" in " ".join(e["failures"]) for e in r["shapes"])


def test_the_report_is_strict_json_and_the_summary_states_the_statistics(as_installed):
    text = json.dumps(as_installed, allow_nan=False)
    assert json.loads(text)["schema"] == sampler.SCHEMA
    summary = sampler.summary(as_installed)
    assert summary.startswith(f"sampler probe: {as_installed['verdict'].upper()}")
    assert f"α={sampler.ALPHA:g}" in summary and f"TV ≥ {sampler.TV_ALTERNATIVE:g}" in summary


def test_the_exact_checks_catch_a_wrong_bonus_and_a_wrong_prefix():
    shape = sampler.Shape("t", 3, 0.0)
    batch = sampler.build_batch(shape, 0)
    out = _greedy_reference(batch)
    assert sampler.exact_checks(shape, batch, out) == []
    full = (out >= 0).sum(1) == 4
    broken = out.copy()
    broken[full, 3] = (broken[full, 3] + 1) % sampler.VOCAB
    assert any("bonus" in p for p in sampler.exact_checks(shape, batch, broken))
    accepted_some = (out >= 0).sum(1) >= 2
    broken = out.copy()
    broken[accepted_some, 0] = (broken[accepted_some, 0] + 1) % sampler.VOCAB
    assert any("not the drafts" in p for p in sampler.exact_checks(shape, batch, broken))


def _greedy_reference(batch):
    """What greedy verification must emit, computed here from the constructed batch alone."""
    import numpy as np

    argmax = [int(np.argmax(p.weights)) for p in batch.positions]
    k = len(argmax)
    out = np.full((len(batch.num_draft), k + 1), -1, np.int32)
    for i in range(len(out)):
        drafts = batch.draft_ids[i * k : (i + 1) * k]
        a = next((j for j in range(k) if drafts[j] != argmax[j]), k)
        out[i, :a] = drafts[:a]
        out[i, a] = argmax[a] if a < k else batch.bonus[i]
    return out
