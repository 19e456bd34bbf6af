"""The GPU's quick eager smoke mode (platform gpu-native-eager, #28 item 5) is labelled as such in every figure:
each table names its methods with the mark, a bold line sits above the verdicts, every plot carries the note in
its caption and drawn at its foot, and a comparison with such a run says so. CPU runs (eager is their only mode
here) and GPU runs in compile mode carry no mark."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from specstack.compare import build as compare_build
from specstack.report import build, plots, render, sections
from specstack.report.plots import plt
from specstack.results.reader import EAGER_MARK, EAGER_NOTE, display_name
from tests.bundles import make_run

pytestmark = pytest.mark.unit


def _serve(run: Path, platform: str, mode: str | None, argv: list[str] | None = None) -> Path:
    """Give every method of `run` the server facts a start on `platform` records (server.startup.mode)."""
    for path in run.glob("*/summary.json"):
        s = json.loads(path.read_text())
        s["server"].update(
            platform=platform,
            startup={"mode": mode, "compile_cache": None},
            argv=argv or ["vllm", "serve", "/models/tiny"],
        )
        path.write_text(json.dumps(s))
    return run


def test_an_eager_gpu_run_is_marked_in_every_table_above_its_verdicts_and_on_every_plot(tmp_path):
    run = _serve(make_run(tmp_path, "smoke"), "gpu-native-eager", "eager")
    rep = build.build(run)
    md = render.render_markdown(sections.blocks(rep)).splitlines()
    rows = [line for line in md if line.startswith(("| ngram", "| baseline"))]
    assert len(rows) >= 8 and all(
        line.startswith(("| ngram [eager smoke] |", "| baseline [eager smoke] |")) for line in rows
    )
    matrix = next(i for i, line in enumerate(md) if line.startswith("| ngram [eager smoke] | baseline |"))
    banner = next(i for i, line in enumerate(md) if EAGER_NOTE[1:] in line)
    assert banner < matrix and md[banner].endswith("baseline, ngram.")
    assert rep.plots and set(rep.plot_captions) == set(rep.plots)
    assert all(c.endswith(f"({EAGER_NOTE})") for c in rep.plot_captions.values())
    build.write_report(run)
    labels = pd.read_csv(run / "report" / "tables" / "methods.csv").set_index("method")["label"]
    assert labels.to_dict() == {"baseline": f"baseline{EAGER_MARK}", "ngram": f"ngram{EAGER_MARK}"}


def test_the_plot_stamp_is_drawn_only_inside_stamped():
    def texts(stamp):
        fig, _ = plt.subplots()
        with plots.stamped(stamp, {}):
            png = plots.png_bytes(fig)
        return png, [t.get_text() for t in fig.texts]

    assert texts(None)[1] == []
    png, drawn = texts(EAGER_NOTE)
    assert drawn == [f"⚠ {EAGER_NOTE}"] and png.startswith(b"\x89PNG")
    assert texts(None)[1] == []  # the stamp ends with its block


@pytest.mark.parametrize(
    "platform,mode,argv,marked",
    [
        ("gpu-native", "compile", None, False),  # the GPU default
        ("cpu-native", "eager", None, False),  # eager is the CPU platforms' only mode here
        ("gpu-native", None, ["vllm", "serve", "m", "--enforce-eager"], True),  # no start-up record: the arguments
        ("gpu-native", None, None, False),
    ],
)
def test_what_counts_as_the_eager_smoke_mode(tmp_path, platform, mode, argv, marked):
    run = _serve(make_run(tmp_path, "r"), platform, mode, argv)
    summary = json.loads((run / "ngram" / "summary.json").read_text())
    assert display_name("ngram", summary) == "ngram" + (EAGER_MARK if marked else "")
    md = build.write_report(run).read_text()
    assert (EAGER_NOTE[1:] in md) is marked and (EAGER_MARK in md) is marked


def test_a_comparison_with_an_eager_run_says_so_and_stamps_its_plots(tmp_path):
    a = _serve(make_run(tmp_path, "a"), "gpu-native-eager", "eager")
    b = _serve(make_run(tmp_path, "b"), "gpu-native", "compile")
    cmp = compare_build.compare(a, b)
    assert f"A: {EAGER_NOTE}: baseline, ngram" in cmp.unmatched
    assert not any(n.startswith("B:") and EAGER_NOTE in n for n in cmp.unmatched)
    assert cmp.plots and all(c.endswith(f"({EAGER_NOTE} (A baseline, ngram))") for c in cmp.plot_captions.values())
