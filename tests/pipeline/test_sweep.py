"""The sweep loop's planning (the runs themselves need vLLM: tests/integration/test_sweep.py, test_faults_sweep.py)."""

from __future__ import annotations

import pytest

from specstack.errors import UserError
from specstack.pipeline import sweep
from specstack.runs.options import Options
from tests.bundles import write_k_sweep

pytestmark = pytest.mark.unit


def test_sweep_k_parses_k_lists():
    assert sweep.parse_ks("4,1, 2") == [1, 2, 4]
    for bad in ("", "0,1", "a", "2,2", "-1"):
        with pytest.raises(UserError):
            sweep.parse_ks(bad)


def test_sweep_k_plans_one_folder_per_k_and_keeps_the_users_override():
    opts = Options(method="ngram", run_id="x", spec_override={"prompt_lookup_max": 3, "num_speculative_tokens": 9})
    assert sweep.plan_runs(opts, [1, 3]) == [
        ("ngram-k1", {"prompt_lookup_max": 3, "num_speculative_tokens": 1}),
        ("ngram-k3", {"prompt_lookup_max": 3, "num_speculative_tokens": 3}),
    ]


def test_sweep_k_refuses_a_plain_decode_method(tmp_path):
    with pytest.raises(UserError, match="no speculative config"):
        sweep.sweep_k(Options(method="baseline", run_id="x", results_dir=tmp_path), [1, 2])
    assert not (tmp_path / "x").exists()


def test_sweep_refuses_an_unknown_method_before_any_server_starts(tmp_path):
    with pytest.raises(Exception, match="ngarm"):
        sweep.sweep(Options(method="baseline", run_id="x", results_dir=tmp_path), ["baseline", "ngarm"])
    assert not (tmp_path / "x").exists()


def test_sessions_interleave_every_method_with_its_baseline_abba(monkeypatch, tmp_path):
    planned = []
    monkeypatch.setattr(sweep, "run_all", lambda opts, entries, report=True: planned.extend(entries) or [])
    opts = Options(method="baseline", run_id="x", results_dir=tmp_path, repeats=3, replicate="sessions")
    sweep.sweep(opts, ["ngram", "baseline"])
    # ABBA: baselines first in odd rounds, methods first in even ones, so neither side always runs first
    assert [name for name, _ in planned] == [
        "baseline-s1",
        "ngram-s1",
        "ngram-s2",
        "baseline-s2",
        "baseline-s3",
        "ngram-s3",
    ]
    for name, one in planned:
        assert (one.bundle_name, one.repeats, one.sessions) == (name, 1, 3) and name.endswith(f"-s{one.session}")
        assert one.replication() == {
            "design": "sessions",
            "session": one.session,
            "sessions": 3,
            "of": name.split("-s")[0],
            "repeats_per_session": 1,
        }


def test_abba_reverses_each_even_round_with_several_methods_and_baselines(monkeypatch, tmp_path):
    planned = []
    monkeypatch.setattr(sweep, "run_all", lambda opts, entries, report=True: planned.extend(entries) or [])
    opts = Options(method="baseline", run_id="x", results_dir=tmp_path, repeats=4, replicate="sessions")
    sweep.sweep(opts, ["ngram", "mtp", "baseline", "mtp-baseline"])
    rounds = [[name for name, one in planned if one.session == s] for s in range(1, 5)]
    first = ["baseline-s1", "mtp-baseline-s1", "ngram-s1", "mtp-s1"]
    assert rounds[0] == first
    assert rounds[1] == [n.replace("-s1", "-s2") for n in reversed(first)]
    assert rounds[2] == [n.replace("-s1", "-s3") for n in first]
    assert rounds[3] == [n.replace("-s1", "-s4") for n in reversed(first)]
    # over the rounds every session sits on average at the same place: a linear drift hits all alike
    places = {}
    for run in rounds:
        for i, name in enumerate(run):
            places.setdefault(name.rsplit("-s", 1)[0], []).append(i)
    assert {m: sum(p) / len(p) for m, p in places.items()} == {m: 1.5 for m in places}


def test_repeats_in_one_session_stay_the_default(monkeypatch, tmp_path):
    planned = []
    monkeypatch.setattr(sweep, "run_all", lambda opts, entries, report=True: planned.extend(entries) or [])
    sweep.sweep(Options(method="baseline", run_id="x", results_dir=tmp_path, repeats=3), ["baseline", "ngram"])
    assert [(name, one.repeats, one.replication()) for name, one in planned] == [
        ("baseline", 3, {"design": "repeats", "repeats": 3}),
        ("ngram", 3, {"design": "repeats", "repeats": 3}),
    ]


def test_an_unknown_design_and_sessions_in_sweep_k_are_refused(tmp_path):
    with pytest.raises(UserError, match="--replicate"):
        Options(method="ngram", run_id="x", replicate="session").validate()
    with pytest.raises(UserError, match="--replicate sessions is for sweep"):
        sweep.sweep_k(Options(method="ngram", run_id="x", results_dir=tmp_path, replicate="sessions"), [1, 2])


def test_k_per_load_is_refused_before_any_server_without_its_repeats_or_loads(tmp_path):
    with pytest.raises(UserError, match="--k-per-load needs --repeats 3 or more"):
        sweep.sweep_k(
            Options(method="ngram", run_id="x", results_dir=tmp_path, concurrencies=(1, 4)), [1, 2], per_load=True
        )
    with pytest.raises(UserError, match=r"--k-per-load needs --concurrency 1 and at least one more.*\[2, 4\]"):
        sweep.sweep_k(
            Options(method="ngram", run_id="x", results_dir=tmp_path, concurrencies=(2, 4), repeats=3),
            [1, 2],
            per_load=True,
        )
    assert not (tmp_path / "x").exists()


def test_k_per_load_runs_its_schedule_as_one_more_folder(monkeypatch, tmp_path):
    planned = []
    monkeypatch.setattr(
        sweep, "run_all", lambda opts, entries, report=True, port_may_be_held=False: planned.extend(entries) or []
    )
    opts = Options(
        method="ngram",
        run_id="x",
        results_dir=tmp_path,
        concurrencies=(1, 4),
        repeats=3,
        spec_override={"prompt_lookup_max": 3},
    )
    write_k_sweep(tmp_path / "x", {0: {1: 100, 4: 300}, 2: {1: 140, 4: 320}, 4: {1: 160, 4: 270}})
    sweep.sweep_k(opts, [2, 4], per_load=True)
    name, one = planned[-1]
    assert name == one.bundle_name == "ngram-kload"
    assert one.spec_override == {
        "prompt_lookup_max": 3,
        "num_speculative_tokens": 4,
        "num_speculative_tokens_per_batch_size": [[1, 3, 4], [4, 4, 2]],
    }


def test_k_per_load_runs_nothing_more_when_one_k_serves_every_load(monkeypatch, tmp_path):
    planned = []
    monkeypatch.setattr(
        sweep,
        "run_all",
        lambda opts, entries, report=True, port_may_be_held=False: planned.append([n for n, _ in entries]) or [],
    )
    opts = Options(method="ngram", run_id="x", results_dir=tmp_path, concurrencies=(1, 4), repeats=3)
    write_k_sweep(tmp_path / "x", {0: {1: 100, 4: 300}, 2: {1: 140, 4: 320}, 4: {1: 130, 4: 290}})
    sweep.sweep_k(opts, [2, 4], per_load=True)
    assert planned == [["baseline", "ngram-k2", "ngram-k4"], []]  # the schedule is K=2 everywhere
