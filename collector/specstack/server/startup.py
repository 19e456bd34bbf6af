"""Where a vLLM 0.32.0 server's start-up time went, read from its own log.

A GPU start in compile mode spends minutes before the first request (torch.compile, FlashInfer compiling
kernels at run time, CUDA graph capture); an eager start about a minute. The log states most phases itself
("Model loading took ... and X seconds", "torch.compile took X s in total", "Graph capturing finished in X
secs", "init engine (...) took X s"); the rest comes from line timestamps (one-second resolution).

Phases (seconds; None where the log does not say):
  to_engine     first log line -> the engine's "Initializing a V1 LLM engine" (imports, config, API process)
  load          weights and model set-up, target and drafter ("Model loading took")
  compile       torch.compile, every compiled module summed (backbone, drafter)
  warmup        the rest of engine init: memory profiling, KV cache, JIT kernel warm-up, FlashInfer
                autotune (engine init - compile - graph capture); where FlashInfer JIT-compiles, it is here
  graph_capture CUDA graph capture
  engine_init   vLLM's own "init engine (profile, create kv cache, warmup model)" figure
  total         first log line -> the last timestamped line before "Application startup complete"
mode is "eager" or "compile" (the engine config's enforce_eager); compile_cache says whether torch.compile
loaded its graphs from vLLM's compile cache ("Directly load ...") rather than compiling them.

Memory (GiB; what turning speculation on costs beside its time): weights_gib, the checkpoints loaded, target and
drafter summed ("Checkpoint size: X GiB", on CPU and GPU); cuda_graph_gib, what graph capture took ("Graph
capturing finished in N secs, took X GiB"); kv_cache_gib, the memory left to the KV cache ("Available KV cache
memory: X GiB", GPU; on CPU VLLM_CPU_KVCACHE_SPACE fixes it).
"""

from __future__ import annotations

import re
from datetime import datetime

_STAMP = re.compile(r"\b(\d\d-\d\d \d\d:\d\d:\d\d)\b")
_ENGINE_INIT_LINE = re.compile(r"Initializing a V\d LLM engine")
_EAGER = re.compile(r"enforce_eager=(True|False)")
_LOAD = re.compile(r"Model loading took [\d.]+ GiB memory and ([\d.]+) seconds")
_COMPILE = re.compile(r"torch\.compile took ([\d.]+) s in total")
_CACHE_HIT = re.compile(r"Directly load (the compiled graph|AOT compil)")
_CAPTURE = re.compile(r"Graph capturing finished in ([\d.]+) secs")
_ENGINE_INIT = re.compile(r"init engine \(profile, create kv cache, warmup model\) took ([\d.]+) s")
_JIT_WARMUP = re.compile(r"JIT kernel warmup finished in ([\d.]+)s")
_READY = "Application startup complete"
_WEIGHTS = re.compile(r"Checkpoint size: ([\d.]+) GiB")
_GRAPH_MEMORY = re.compile(r"Graph capturing finished in [\d.]+ secs, took ([\d.]+) GiB")
_KV_MEMORY = re.compile(r"Available KV cache memory: ([\d.]+) GiB")

PHASES = ("to_engine", "load", "compile", "warmup", "graph_capture", "engine_init", "total")


def _stamp(line: str) -> datetime | None:
    m = _STAMP.search(line)
    # the log has no year; 2000 is a leap year, so 02-29 parses
    return datetime.strptime("2000-" + m.group(1), "%Y-%m-%d %H:%M:%S") if m else None


def _sum(pattern: re.Pattern, text: str) -> float | None:
    found = [float(v) for v in pattern.findall(text)]
    return round(sum(found), 2) if found else None


def _first(pattern: re.Pattern, text: str) -> float | None:
    m = pattern.search(text)
    return float(m.group(1)) if m else None


def _seconds(start: datetime | None, end: datetime | None) -> float | None:
    return None if start is None or end is None else (end - start).total_seconds()


def phases(log_text: str) -> dict:
    """The start-up phases of the first start in a server log (see the module docstring)."""
    lines = log_text.splitlines()
    first = next((s for s in map(_stamp, lines) if s is not None), None)
    engine_at = next((_stamp(line) for line in lines if _ENGINE_INIT_LINE.search(line)), None)
    ready_at, last = None, None
    for line in lines:
        if _READY in line:
            ready_at = last
            break
        last = _stamp(line) or last
    eager = _EAGER.search(log_text)
    compile_s, capture_s = _sum(_COMPILE, log_text), _first(_CAPTURE, log_text)
    engine_init = _first(_ENGINE_INIT, log_text)
    warmup = None
    if engine_init is not None:
        warmup = round(max(0.0, engine_init - (compile_s or 0.0) - (capture_s or 0.0)), 2)
    return {
        "mode": None if eager is None else ("eager" if eager.group(1) == "True" else "compile"),
        "compile_cache": ("hit" if _CACHE_HIT.search(log_text) else "miss") if compile_s is not None else None,
        "to_engine": _seconds(first, engine_at),
        "load": _sum(_LOAD, log_text),
        "compile": compile_s,
        "warmup": warmup,
        "jit_kernel_warmup": _first(_JIT_WARMUP, log_text),
        "graph_capture": capture_s,
        "engine_init": engine_init,
        "total": _seconds(first, ready_at),
        "weights_gib": _sum(_WEIGHTS, log_text),
        "cuda_graph_gib": _first(_GRAPH_MEMORY, log_text),
        "kv_cache_gib": _first(_KV_MEMORY, log_text),
    }
