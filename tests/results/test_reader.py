"""The one bundle reader (table, report, sweep resume): which folder is a method's result, and the schema version
of every summary it reads: older versions migrated, unknown ones refused with the fix."""

from __future__ import annotations

import json

import pytest

from specstack.errors import UserError
from specstack.results import reader
from specstack.results.bundle import SUMMARY_SCHEMA, MethodBundle, update_manifest

pytestmark = pytest.mark.unit


def summary(method: str, status: str = "ok", schema: str = SUMMARY_SCHEMA, **extra) -> dict:
    return {
        "schema": schema,
        "method": method,
        "status": status,
        "baseline_method": None,
        "error": None if status == "ok" else "server died",
        "tasks": {},
        **extra,
    }


def publish(results, s: dict, ok: bool, run_id: str = "r", force: bool = False):
    bundle = MethodBundle(results, run_id, s["method"], force=force)
    bundle.write_json("summary.json", s)
    folder = bundle.finalize(ok)
    update_manifest(
        results / run_id, methods={s["method"]: {"status": s["status"], "dir": folder.name, "error": s["error"]}}
    )
    return folder


def test_a_summary_of_an_unknown_version_is_refused_with_the_fix(tmp_path):
    folder = publish(tmp_path, summary("baseline", schema="specstack.summary/9"), ok=True)
    with pytest.raises(reader.SchemaError, match=r"summary/9.*reads up to 'specstack.summary/3'.*git commit"):
        reader.read_summary(folder)
    with pytest.raises(UserError, match="summary/9"):  # the table and the report stop with that message too
        reader.load_run(tmp_path / "r")


def test_a_file_that_is_no_specstack_summary_is_refused(tmp_path):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "summary.json").write_text(json.dumps({"method": "m"}))
    with pytest.raises(reader.SchemaError, match="not a specstack summary"):
        reader.read_summary(tmp_path / "m")
    (tmp_path / "m" / "summary.json").write_text('{"schema": "specstack.summary/1", ')
    with pytest.raises(reader.SchemaError, match="not valid JSON"):
        reader.read_summary(tmp_path / "m")


def test_version_1_is_migrated_on_read_and_left_as_it_is_on_disk(tmp_path):
    v1_with_view = summary(
        "eagle3",
        schema="specstack.summary/1",
        prometheus_wait=None,
        prometheus_view={"url": "http://p", "tasks": {"code": {"status": "ok"}}},
    )
    v1_without = summary("baseline", schema="specstack.summary/1")
    a, b = publish(tmp_path, v1_with_view, ok=True), publish(tmp_path, v1_without, ok=True)
    got = reader.read_summary(a)
    assert got["schema"] == SUMMARY_SCHEMA and "prometheus_wait" not in got
    assert got["prometheus_view"] == {"status": "checked", "url": "http://p", "tasks": {"code": {"status": "ok"}}}
    assert reader.read_summary(b)["prometheus_view"] == {"status": "not collected", "tasks": {}}
    assert json.loads((a / "summary.json").read_text())["schema"] == "specstack.summary/1"


def test_a_resumed_sweep_skips_only_a_published_good_result(tmp_path):
    publish(tmp_path, summary("ngram", status="failed"), ok=False)
    assert reader.good_result(tmp_path / "r", "ngram") is None  # only ngram.failed-<time>/ exists
    publish(tmp_path, summary("ngram"), ok=True)
    assert reader.good_result(tmp_path / "r", "ngram")["status"] == "ok"
    assert reader.good_result(tmp_path / "r", "suffix") is None


def test_load_run_lists_failed_attempts_and_ignores_replaced_ones(tmp_path):
    publish(tmp_path, summary("baseline"), ok=True)
    publish(tmp_path, summary("baseline"), ok=True, force=True)  # keeps baseline.replaced-<time>/
    publish(tmp_path, summary("ngram", status="failed"), ok=False)
    run = reader.load_run(tmp_path / "r")
    assert list(run.methods) == ["baseline"]
    assert [(f.name, f.superseded) for f in run.failed] == [("ngram", False)]
    assert any(p.name.startswith("baseline.replaced-") for p in (tmp_path / "r").iterdir())


def test_an_empty_or_missing_run_folder_says_what_to_pass(tmp_path):
    (tmp_path / "r").mkdir()
    with pytest.raises(UserError, match="holds no method results"):
        reader.load_run(tmp_path / "r")
    with pytest.raises(UserError, match="is not a run folder"):
        reader.load_run(tmp_path / "nope")


def test_version_2_is_migrated_to_repeats_in_one_session(tmp_path):
    v2 = summary(
        "ngram",
        schema="specstack.summary/2",
        tasks={
            "code": {
                "bench": [{"concurrency": 1, "repeat": r} for r in range(3)]
                + [{"concurrency": 4, "repeat": r} for r in range(3)]
            }
        },
    )
    got = reader.read_summary(publish(tmp_path, v2, ok=True))
    assert got["replication"] == {"design": "repeats", "repeats": 3}


def test_server_sessions_of_a_method_are_read_as_one_method(tmp_path):
    for s in (1, 2, 3):
        for method, baseline in (("baseline", None), ("ngram", "baseline")):
            cell = {"concurrency": 1, "repeat": 0, "status": "ok", "file": "bench/code-c1-r0.json"}
            window = {"name": "bench/code-c1-r0", "phase": "bench", "task": "code", "concurrency": 1, "repeat": 0}
            publish(
                tmp_path,
                summary(
                    f"{method}-s{s}",
                    baseline_method=baseline,
                    replication={
                        "design": "sessions",
                        "session": s,
                        "sessions": 3,
                        "of": method,
                        "repeats_per_session": 1,
                    },
                    tasks={"code": {"bench": [cell], "acceptance_rate": 0.1 * s}},
                    windows=[window, {"name": "acceptance/code", "phase": "acceptance"}],
                    crosscheck={"ok": s != 2 or method != "ngram", "checks": 5},
                ),
                ok=True,
            )
    run = reader.load_run(tmp_path / "r")
    assert list(run.methods) == ["baseline", "ngram"] and not run.warnings
    ngram = run.methods["ngram"]
    assert ngram.folders == ["ngram-s1", "ngram-s2", "ngram-s3"] and ngram.path.name == "ngram-s1"
    cells = ngram.tasks["code"]["bench"]
    assert [(c["repeat"], c["session"], c["file"]) for c in cells] == [
        (i, i + 1, f"../ngram-s{i + 1}/bench/code-c1-r0.json") for i in range(3)
    ]
    assert (ngram.path / cells[2]["file"]).resolve() == (tmp_path / "r" / "ngram-s3" / "bench" / "code-c1-r0.json")
    assert [w["repeat"] for w in ngram.summary["windows"] if w["phase"] == "bench"] == [0, 1, 2]
    assert ngram.tasks["code"]["acceptance_rate"] == pytest.approx(0.1)  # the first session's
    assert ngram.summary["crosscheck"] == {"ok": False, "checks": 15}  # session 2 did not reconcile
    assert run.methods["baseline"].summary["crosscheck"]["ok"] is True


def test_a_method_with_only_its_slot_has_no_result_yet(tmp_path):
    """A parallel sweep's method whose server is up (its slot recorded) but whose collector has not finished."""
    from tests.bundles import make_run

    run = make_run(tmp_path, "r")
    update_manifest(run, methods={"eagle3": {"slot": {"cpuset": "1", "asked": "1"}}})
    (failed,) = reader.load_run(run).failed
    assert failed.name == "eagle3" and failed.error.startswith("no result yet: still running")
