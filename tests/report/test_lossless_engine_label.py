"""The lossless section's engine-sampler label (report/lossless.py): a flagged difference on a platform whose
engine sampler failed the probe says so next to the method; the rows and the Markdown carry it."""

import pytest

from specstack.report import lossless, output_sections, render
from specstack.report.contents import Report
from specstack.results.reader import MethodData

pytestmark = pytest.mark.unit


def _md(tmp_path, probe):
    summary = {"method": "draft_model", **({"sampler_probe": probe} if probe else {})}
    return MethodData("draft_model", tmp_path, summary)


@pytest.mark.parametrize(
    "probe, engine",
    [
        ({"verdict": "fail"}, "biased"),
        ({"verdict": "pass"}, "exact"),
        ({"verdict": "not run"}, "not run"),
        (None, "not run"),
        ({"verdict": "error"}, "error"),
    ],
)
def test_engine_sampler_reads_the_summary(tmp_path, probe, engine):
    assert lossless.engine_sampler(_md(tmp_path, probe)) == engine


def test_only_a_flagged_row_gets_the_label():
    flagged = "differs: prompt code-000 position 1 (TV 0.80, Holm p 0.016; 11 of 16 tests below α=0.05)"
    assert lossless.labelled_verdict(flagged, 11, "biased") == f"{flagged}; {lossless.ENGINE_BIASED}"
    assert lossless.labelled_verdict(flagged, 11, "exact").endswith("passed the probe on this platform")
    assert lossless.labelled_verdict(flagged, 11, "not run") == flagged
    calm = "no evidence of a difference at α=0.05 (16 tests)"
    assert lossless.labelled_verdict(calm, 0, "biased") == calm


def test_lossless_rows_label_the_flagged_method_of_a_biased_platform(tmp_path, monkeypatch):
    """Two methods against one baseline, both flagged by the test; only the one whose run recorded a failed probe
    is labelled (records constructed: the baseline draws token 1, the methods token 2, at every position)."""
    from specstack.results.reader import RunData

    def records(token):
        return [{"id": f"p{p}/s{k}", "error": None, "token_ids": [token] * 4} for p in range(2) for k in range(64)]

    sampled = {"1": {"temperature": 1.0}}
    methods = {}
    for name, baseline, probe in (
        ("baseline", None, None),
        ("draft_model", "baseline", {"verdict": "fail"}),
        ("eagle3", "baseline", {"verdict": "not run"}),
    ):
        summary = {
            "method": name,
            "baseline_method": baseline,
            "tasks": {"code": {"sampled": sampled}},
            **({"sampler_probe": probe} if probe else {}),
        }
        methods[name] = MethodData(name, tmp_path / name, summary)
    monkeypatch.setattr(lossless, "sampled_records", lambda md, task, t: records(1 if md.name == "baseline" else 2))
    run = RunData(run_dir=tmp_path, manifest={"workload": {"tasks": ["code"]}}, methods=methods, failed=[])
    rows = {r["method"]: r for r in lossless.lossless_rows(run)}
    assert rows["draft_model"]["flagged"] and rows["draft_model"]["engine_sampler"] == "biased"
    assert rows["draft_model"]["verdict"].endswith(lossless.ENGINE_BIASED)
    assert rows["eagle3"]["flagged"] and not rows["eagle3"]["verdict"].endswith(lossless.ENGINE_BIASED)
    rep = Report(run, *([[]] * 10), lossless=list(rows.values()))
    md = render.render_markdown(output_sections.lossless_table(rep, "code"))
    line = next(x for x in md.splitlines() if x.startswith("| draft_model"))
    assert "| biased |" in line and lossless.ENGINE_BIASED in line
