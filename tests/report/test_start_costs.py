"""Issue 41 point 10: what turning speculation on costs before the first request, one table per run: time to
ready (first or cached start), checkpoints, CUDA graph and KV cache memory, KV cache tokens, each against the
baseline's; from server.startup, or from the bundle's server log where the summary predates those figures."""

from __future__ import annotations

import json

import pytest

from specstack.report import build, render, sections, tables
from tests.bundles import manifest, write_method

pytestmark = pytest.mark.unit

TEXTS = {"code": {"r0": ("a b", "stop")}}
CHECKPOINT = (
    "(EngineCore pid=1) INFO 12-03 07:07:26 [weight_utils.py:1108] Filesystem type for checkpoints: "
    "EXT4. Checkpoint size: {} GiB. Available RAM: 122.21 GiB.\n"
)
KV = "(EngineCore pid=1) INFO 12-03 07:08:04 [gpu_worker.py:759] Available KV cache memory: {} GiB\n"


def _start(run_dir, method: str, ready: float, startup: dict | None, tokens: int, log: str | None) -> None:
    path = run_dir / method / "summary.json"
    s = json.loads(path.read_text())
    s["timings"] = {"server_ready": ready, "total": ready + 60}
    s["server"]["kv_cache_tokens"] = tokens
    if startup is not None:
        s["server"]["startup"] = startup
    path.write_text(json.dumps(s))
    if log is not None:
        (run_dir / method / "server.log").write_text(log)


def test_each_method_s_start_up_costs_against_its_baseline(tmp_path):
    run_dir = tmp_path / "costs"
    run_dir.mkdir()
    write_method(run_dir, "baseline", baseline=None, k=None, cells={("code", 1): [(10.0, 100.0, {})]}, texts=TEXTS)
    write_method(
        run_dir, "draft_model", baseline="baseline", texts=TEXTS, cells={("code", 1): [(8.0, 120.0, {"acc_len": 2.0})]}
    )
    manifest(run_dir, {m: {"status": "ok", "dir": m, "error": None} for m in ("baseline", "draft_model")})
    # the baseline's summary has the figures; draft_model's predates them and its log says them
    _start(
        run_dir,
        "baseline",
        224.0,
        {"compile_cache": "miss", "weights_gib": 0.25, "cuda_graph_gib": 0.08, "kv_cache_gib": 118.23},
        5_509_824,
        None,
    )
    _start(
        run_dir,
        "draft_model",
        102.0,
        {"compile_cache": "hit"},
        4_000_000,
        CHECKPOINT.format(0.25) + CHECKPOINT.format(0.11) + KV.format(110.5),
    )  # target, its draft
    rep = build.build(run_dir, with_plots=False)
    rows = {r["method"]: r for r in rep.start_costs}
    dm = rows["draft_model"]
    assert dm["weights_gib"] == pytest.approx(0.36) and dm["baseline_weights_gib"] == 0.25
    assert dm["kv_cache_gib"] == 110.5 and dm["cuda_graph_gib"] is None and dm["compile_cache"] == "hit"
    assert dm["kv_cache_loss"] == pytest.approx(1 - 4_000_000 / 5_509_824)
    md = render.render_markdown(sections.blocks(rep))
    line = next(x for x in md.split("## What speculation costs", 1)[1].splitlines() if x.startswith("| draft_model"))
    assert line == (
        "| draft_model | baseline | 102.0 (-122.0) | hit | 0.36 (+0.11) | n/a | 110.50 (-7.73) | "
        "4,000,000 (-1,509,824) | 27.4 % |"
    )
    csv, _ = tables.table_bytes("start_costs", rep.start_costs)
    assert csv.decode().splitlines()[0].split(",") == tables.COLUMNS["start_costs"]
