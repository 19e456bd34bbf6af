"""The report's parallel-run section (report/placement.py): each method's slot and whether its baseline ran on
the same one; none for a serial run."""
from __future__ import annotations

import json

import pytest

from specstack.report import build, sections
from specstack.report.render import render_markdown
from tests.bundles import make_run

pytestmark = pytest.mark.unit

H100 = "NVIDIA H100 80GB HBM3"


def _slots(run, mode: str | None, slots: dict) -> None:
    path = run / "manifest.json"
    m = json.loads(path.read_text())
    if mode:
        m["mode"] = mode
    for name, slot in slots.items():
        m["methods"][name]["slot"] = slot
    path.write_text(json.dumps(m))


def _section(run) -> str:
    return render_markdown(sections.placement(build.build(run, with_plots=False)))


def test_a_method_on_another_gpu_than_its_baseline_is_said_so(tmp_path):
    run = make_run(tmp_path, "r")
    _slots(run, "parallel", {"baseline": {"asked": "0", "gpu_index": "0", "gpu_uuid": "GPU-a", "gpu_name": H100},
                             "ngram": {"asked": "1", "gpu_index": "1", "gpu_uuid": "GPU-b", "gpu_name": H100}})
    text = _section(run)
    assert f"| ngram | GPU 1 (GPU-b, {H100}) | baseline | GPU 0 (GPU-a, {H100}) | different: the speedup" in text
    assert f"| baseline | GPU 0 (GPU-a, {H100}) | — | — | — |" in text


def test_the_same_cpuset_and_an_unrecorded_slot(tmp_path):
    run = make_run(tmp_path, "r")
    _slots(run, "parallel", {"baseline": {"cpuset": "1", "asked": "1"}, "ngram": {"cpuset": "1", "asked": "1"}})
    assert "| ngram | cpuset 1 | baseline | cpuset 1 | same |" in _section(run)
    run2 = make_run(tmp_path, "r2")
    _slots(run2, "parallel", {"baseline": {"cpuset": "0", "asked": "0"}})
    assert "| ngram | n/a | baseline | cpuset 0 | unknown (a slot was not recorded) |" in _section(run2)


def test_a_serial_run_has_no_placement_section(tmp_path):
    run = make_run(tmp_path, "r")
    assert _section(run) == ""
    _slots(run, "parallel", {})
    assert "## Parallel run: where each method ran" in render_markdown(sections.blocks(build.build(run, with_plots=False)))


def test_a_gpu_slot_names_the_cores_its_server_was_pinned_to(tmp_path):
    run = make_run(tmp_path, "r")
    gpu = {"asked": "0", "gpu_index": "0", "gpu_uuid": "GPU-a", "gpu_name": H100, "cpuset": "0-15"}
    _slots(run, "parallel", {"baseline": gpu, "ngram": {**gpu, "cpuset": "16-31"}})
    assert f"| ngram | GPU 0 (GPU-a, {H100}, cores 16-31) | baseline | GPU 0 (GPU-a, {H100}, cores 0-15) | same |" \
        in _section(run)
