"""Start-up phases read from vLLM 0.32.0 server logs of the first H200 runs (trimmed copies in logs/)."""

from pathlib import Path

import pytest

from specstack.server import startup

pytestmark = pytest.mark.unit

LOGS = Path(__file__).parent / "logs"


def test_compile_mode_first_start():
    """The first compile-mode start: torch.compile 24 s, the rest of engine init is warm-up (FlashInfer's
    run-time kernel compiles), graph capture 1 s; the harness never saw it ready (it failed at start-up)."""
    p = startup.phases((LOGS / "h200-compile-first.log").read_text())
    assert p["mode"] == "compile" and p["compile_cache"] == "miss"
    assert p["load"] == 1.82 and p["compile"] == 24.29 and p["graph_capture"] == 1.0
    assert p["engine_init"] == 161.78 and p["warmup"] == pytest.approx(161.78 - 24.29 - 1.0)
    assert p["jit_kernel_warmup"] == 15.95
    assert p["to_engine"] == 55.0  # 19:17:13 -> 19:18:08
    assert p["total"] is None  # no "Application startup complete" in this log


def test_eager_start():
    p = startup.phases((LOGS / "h200-eager.log").read_text())
    assert p["mode"] == "eager"
    assert p["compile"] is None and p["compile_cache"] is None and p["graph_capture"] is None
    assert p["load"] == 2.8 and p["engine_init"] == 8.84 and p["warmup"] == 8.84
    assert p["total"] == 79.0  # 19:40:22 -> 19:41:41, the last stamped line before startup complete


def test_cached_compile_and_drafter_summed():
    """A start that finds its graphs in vLLM's compile cache says 'Directly load'; a drafter's torch.compile
    adds to the target's."""
    log = "\n".join(
        [
            "(EngineCore pid=1) INFO 12-01 10:00:00 [core.py:133] Initializing a V1 LLM engine (v0.32.0) with "
            "config: model='m', enforce_eager=False, ...",
            "(EngineCore pid=1) INFO 12-01 10:00:02 [backends.py:296] [backbone] Directly load the compiled graph(s) "
            "for compile range (1, 4096) from the cache, took 0.512 s",
            "(EngineCore pid=1) INFO 12-01 10:00:02 [monitor.py:62] [backbone] torch.compile took 1.50 s in total",
            "(EngineCore pid=1) INFO 12-01 10:00:03 [monitor.py:62] [drafter] torch.compile took 0.75 s in total",
        ]
    )
    p = startup.phases(log)
    assert p["compile_cache"] == "hit" and p["compile"] == 2.25
    assert p["engine_init"] is None and p["warmup"] is None


def test_empty_log_says_nothing():
    assert all(v is None for v in startup.phases("").values())


def test_what_a_start_costs_in_memory():
    """Issue 41 point 10, from the lines of real logs: the H200's ngram start (one checkpoint, graph capture, the
    KV cache left) and the CPU's draft_model start (target and its 8-layer draft summed)."""
    h200 = "\n".join(
        [
            "(EngineCore pid=3948) INFO 12-03 07:07:26 [weight_utils.py:1108] Filesystem type for checkpoints: EXT4. "
            "Checkpoint size: 0.25 GiB. Available RAM: 122.21 GiB.",
            "(EngineCore pid=3948) INFO 12-03 07:08:04 [gpu_worker.py:759] Available KV cache memory: 118.1 GiB",
            "(EngineCore pid=3110) INFO 12-03 07:03:33 [gpu_model_runner.py:6581] Graph capturing finished in 2 secs, "
            "took 0.08 GiB",
        ]
    )
    p = startup.phases(h200)
    assert (p["weights_gib"], p["cuda_graph_gib"], p["kv_cache_gib"]) == (0.25, 0.08, 118.1)
    cpu = "\n".join(
        [
            "(Worker pid=11444) INFO 12-03 22:43:05 [weight_utils.py:1108] Filesystem type for checkpoints: EXT4. "
            "Checkpoint size: 0.25 GiB. Available RAM: 20.92 GiB.",
            "(Worker pid=11444) INFO 12-03 22:43:07 [weight_utils.py:1108] Filesystem type for checkpoints: EXT4. "
            "Checkpoint size: 0.11 GiB. Available RAM: 20.46 GiB.",
        ]
    )
    p = startup.phases(cpu)
    assert (p["weights_gib"], p["cuda_graph_gib"], p["kv_cache_gib"]) == (0.36, None, None)
