"""Synthetic inputs laid out like vLLM 0.32.0's: a /metrics page (prometheus_client text format) scaled by
engines, and acceptance records as the collector writes them. For measuring how the collector scales without
a server of that size."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

K = 4  # drafts per step in the synthetic data (ngram/draft_model use 4)


_ENGINE_COUNTERS = (
    "vllm:estimated_flops_per_gpu",
    "vllm:estimated_read_bytes_per_gpu",
    "vllm:estimated_write_bytes_per_gpu",
)


_CACHE_COUNTERS = (
    "vllm:prefix_cache_queries",
    "vllm:prefix_cache_hits",
    "vllm:external_prefix_cache_queries",
    "vllm:external_prefix_cache_hits",
    "vllm:mm_cache_queries",
    "vllm:mm_cache_hits",
)


# Histograms of vLLM 0.32.0's page with their bucket counts (+Inf included).
_HISTOGRAMS = (
    ("vllm:request_prompt_tokens", 12),
    ("vllm:request_generation_tokens", 12),
    ("vllm:iteration_tokens_total", 14),
    ("vllm:request_max_num_generation_tokens", 12),
    ("vllm:request_params_n", 6),
    ("vllm:request_params_max_tokens", 12),
    ("vllm:time_to_first_token_seconds", 23),
    ("vllm:inter_token_latency_seconds", 20),
    ("vllm:request_time_per_output_token_seconds", 20),
    ("vllm:e2e_request_latency_seconds", 22),
    ("vllm:request_queue_time_seconds", 22),
    ("vllm:request_inference_time_seconds", 22),
    ("vllm:request_prefill_time_seconds", 22),
    ("vllm:request_decode_time_seconds", 22),
    ("vllm:request_num_preemptions", 8),
    ("vllm:request_prefill_kv_computed_tokens", 12),
)


_CACHE_INFO = ",".join(
    f'{k}="{v}"'
    for k, v in (
        ("block_size", "128"),
        ("cache_dtype", "auto"),
        ("enable_prefix_caching", "False"),
        ("gpu_memory_utilization", "0.85"),
        ("kv_cache_memory_bytes", "1073741824"),
        ("kv_cache_size_tokens", "2097152"),
        ("kv_offloading_backend", "native"),
        ("mamba_cache_dtype", "auto"),
        ("num_cpu_blocks", "None"),
        ("num_gpu_blocks", "16384"),
        ("num_gpu_blocks_override", "None"),
        ("prefix_caching_hash_algo", "sha256"),
        ("sliding_window", "None"),
        ("swa_bounded_replay", "True"),
        ("user_specified_block_size", "False"),
    )
)


# Long (about 100 lines) on purpose: one family after another in the order vLLM 0.32.0 writes its page, so it
# can be read side by side with a real /metrics page; split into helpers, that order would be lost.
def synthetic_page(engines: int = 1, *, requests_done: int = 128, k: int = K) -> str:
    """A /metrics page laid out as vLLM 0.32.0 (prometheus_client text format: `_total` counter families,
    `_created` gauge families, histograms with their bucket counts) for `engines` engines. One engine gives
    ~650 lines / ~470 samples / ~55 KB, like the real page of a spec-decode server; every family carries an
    `engine` label, so lines grow in proportion to engines. Counter values are functions of requests_done,
    the same in every engine."""
    out: list[str] = []
    created = "1.7959534899316866e+09"

    def family(name: str, kind: str, rows: Callable[[str], list[str]], *, per_engine: bool = True) -> None:
        out.append(f"# HELP {name} {name.split(':')[-1].replace('_', ' ')}.")
        out.append(f"# TYPE {name} {kind}")
        for e in range(engines) if per_engine else (None,):
            out.extend(rows(f'engine="{e}",model_name="spec-demo"' if e is not None else ""))

    def counter(name: str, values: dict[str, float], label: str = "") -> None:
        """values: {label value: count}; label "" = one unlabelled series per engine."""

        def series(lab: str, v: str) -> str:
            return lab + (f',{label}="{v}"' if label else "")

        family(
            f"{name}_total", "counter", lambda lab: [f"{name}_total{{{series(lab, v)}}} {c}" for v, c in values.items()]
        )
        family(
            f"{name}_created", "gauge", lambda lab: [f"{name}_created{{{series(lab, v)}}} {created}" for v in values]
        )

    for name in ("python_gc_objects_collected", "python_gc_objects_uncollectable", "python_gc_collections"):

        def gc_rows(_: str, name: str = name) -> list[str]:
            return [f'{name}_total{{generation="{g}"}} {g * 7}.0' for g in range(3)]

        family(f"{name}_total", "counter", gc_rows, per_engine=False)
    family(
        "python_info",
        "gauge",
        lambda _: ['python_info{implementation="CPython",major="3",minor="11"} 1.0'],
        per_engine=False,
    )
    for name in (
        "process_virtual_memory_bytes",
        "process_resident_memory_bytes",
        "process_start_time_seconds",
        "process_cpu_seconds_total",
        "process_open_fds",
        "process_max_fds",
    ):

        def process_rows(_: str, n: str = name) -> list[str]:
            return [f"{n} {'1.79595346001e+09' if 'start' in n else '12345.0'}"]

        family(name, "counter" if name.endswith("_total") else "gauge", process_rows, per_engine=False)
    drafts = requests_done * 40
    accepted_pos = [int(drafts * 0.6 ** (p + 1)) for p in range(k)]
    counter("vllm:spec_decode_num_drafts", {"": float(drafts)})
    counter("vllm:spec_decode_num_draft_tokens", {"": float(drafts * k)})
    counter("vllm:spec_decode_num_accepted_tokens", {"": float(sum(accepted_pos))})
    counter(
        "vllm:spec_decode_num_accepted_tokens_per_pos",
        {str(p): float(c) for p, c in enumerate(accepted_pos)},
        "position",
    )
    for name in _ENGINE_COUNTERS:
        counter(name, {"": 0.0})
    family("vllm:num_requests_running", "gauge", lambda lab: [f"vllm:num_requests_running{{{lab}}} 0.0"])
    family("vllm:num_requests_waiting", "gauge", lambda lab: [f"vllm:num_requests_waiting{{{lab}}} 0.0"])
    family(
        "vllm:num_requests_waiting_by_reason",
        "gauge",
        lambda lab: [
            f'vllm:num_requests_waiting_by_reason{{{lab},reason="{r}"}} 0.0' for r in ("capacity", "deferred")
        ],
    )
    family(
        "vllm:engine_sleep_state",
        "gauge",
        lambda lab: [
            f'vllm:engine_sleep_state{{{lab},sleep_state="{s}"}} {float(s == "awake")}'
            for s in ("awake", "weights_offloaded", "discard_all")
        ],
    )
    family("vllm:kv_cache_usage_perc", "gauge", lambda lab: [f"vllm:kv_cache_usage_perc{{{lab}}} 0.0"])
    for name in _CACHE_COUNTERS:
        counter(name, {"": 0.0})
    counter("vllm:num_preemptions", {"": 0.0})
    counter("vllm:prompt_tokens", {"": requests_done * 90.0})
    sources = ("local_compute", "local_cache_hit", "external_kv_transfer")
    counter(
        "vllm:prompt_tokens_by_source", {s: requests_done * 90.0 * (s == "local_compute") for s in sources}, "source"
    )
    counter("vllm:prompt_tokens_cached", {"": 0.0})
    counter("vllm:prompt_tokens_cached_by_source", {s: 0.0 for s in sources}, "source")
    counter("vllm:generation_tokens", {"": requests_done * 200.0})
    counter(
        "vllm:request_success",
        {"stop": requests_done * 0.75, "length": requests_done * 0.25, "abort": 0.0, "error": 0.0, "repetition": 0.0},
        "finished_reason",
    )
    counter("vllm:admission_rejections", {"": 0.0})
    for name, buckets in _HISTOGRAMS:
        bounds = [f"{0.001 * 2**i:.6g}" for i in range(buckets - 1)] + ["+Inf"]

        def histogram_rows(lab: str, n: str = name, bs: list[str] = bounds) -> list[str]:
            return [f'{n}_bucket{{{lab},le="{b}"}} {float(min(3 * i, requests_done))}' for i, b in enumerate(bs)] + [
                f"{n}_count{{{lab}}} {float(requests_done)}",
                f"{n}_sum{{{lab}}} {requests_done * 0.37}",
            ]

        def histogram_created(lab: str, n: str = name) -> list[str]:
            return [f"{n}_created{{{lab}}} {created}"]

        family(name, "histogram", histogram_rows)
        family(f"{name}_created", "gauge", histogram_created)
    family("vllm:cache_config_info", "gauge", lambda lab: [f"vllm:cache_config_info{{{_CACHE_INFO},{lab}}} 1.0"])
    # The API server's HTTP families (one API server, whatever the engine count).
    handlers = (("/v1/models", "GET"), ("/v1/chat/completions", "POST"), ("/v1/completions", "POST"))
    family(
        "http_requests_total",
        "counter",
        lambda _: [
            f'http_requests_total{{handler="{h}",method="{m}",status="2xx"}} {float(requests_done)}'
            for h, m in handlers
        ],
        per_engine=False,
    )
    family(
        "http_requests_created",
        "gauge",
        lambda _: [f'http_requests_created{{handler="{h}",method="{m}",status="2xx"}} {created}' for h, m in handlers],
        per_engine=False,
    )
    for name in ("http_request_size_bytes", "http_response_size_bytes"):

        def summary_rows(_: str, n: str = name) -> list[str]:
            return [
                row
                for h, _m in handlers
                for row in (
                    f'{n}_count{{handler="{h}"}} {float(requests_done)}',
                    f'{n}_sum{{handler="{h}"}} {requests_done * 500.0}',
                )
            ]

        def summary_created(_: str, n: str = name) -> list[str]:
            return [f'{n}_created{{handler="{h}"}} {created}' for h, _m in handlers]

        family(name, "summary", summary_rows, per_engine=False)
        family(f"{name}_created", "gauge", summary_created, per_engine=False)
    bounds = [f"{0.01 * 1.5**i:.4g}" for i in range(21)] + ["+Inf"]
    family(
        "http_request_duration_highr_seconds",
        "histogram",
        lambda _: (
            [f'http_request_duration_highr_seconds_bucket{{le="{b}"}} {float(requests_done)}' for b in bounds]
            + [
                f"http_request_duration_highr_seconds_count {float(requests_done)}",
                f"http_request_duration_highr_seconds_sum {requests_done * 0.2}",
            ]
        ),
        per_engine=False,
    )
    family(
        "http_request_duration_highr_seconds_created",
        "gauge",
        lambda _: [f"http_request_duration_highr_seconds_created {created}"],
        per_engine=False,
    )
    family(
        "http_request_duration_seconds",
        "histogram",
        lambda _: [
            row
            for h, m in handlers
            for row in [
                f'http_request_duration_seconds_bucket{{handler="{h}",le="{b}",method="{m}"}} {float(requests_done)}'
                for b in ("0.1", "0.5", "1.0", "+Inf")
            ]
            + [
                f'http_request_duration_seconds_count{{handler="{h}",method="{m}"}} {float(requests_done)}',
                f'http_request_duration_seconds_sum{{handler="{h}",method="{m}"}} {requests_done * 0.2}',
            ]
        ],
        per_engine=False,
    )
    family(
        "http_request_duration_seconds_created",
        "gauge",
        lambda _: [
            f'http_request_duration_seconds_created{{handler="{h}",method="{m}"}} {created}' for h, m in handlers
        ],
        per_engine=False,
    )
    return "\n".join(out) + "\n"


def synthetic_record(i: int, task: str, rng: random.Random, k: int = K) -> dict:
    """One acceptance record as phases.run_requests writes it, with per-request spec metrics."""
    steps = rng.randint(20, 80)
    hist = [0] * (k + 1)
    for _ in range(steps):
        hist[min(k, int(rng.expovariate(0.9)))] += 1
    accepted = sum(j * c for j, c in enumerate(hist))
    tokens = steps + accepted
    text = " ".join(f"word{(i * 31 + t) % 997}" for t in range(tokens))
    return {
        "id": f"{task}-{i}",
        "request": {
            "model": "spec-demo",
            "messages": [{"role": "user", "content": f"Case {i}: synthetic prompt " * 8}],
            "max_tokens": 256,
            "temperature": 0,
        },
        "http_status": 200,
        "seconds": 1.0,
        "response": {
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 60, "completion_tokens": tokens, "total_tokens": 60 + tokens},
            "metrics": {
                "speculative_decoding": {
                    "num_spec_steps": steps,
                    "num_draft_tokens": steps * k,
                    "num_accepted_draft_tokens": accepted,
                    "acceptance_histogram": hist,
                }
            },
        },
    }


@dataclass
class ScaleInput:
    factor: int
    requests: int
    before: str
    after: str
    files: dict[str, Path] = field(default_factory=dict)

    @property
    def page_lines(self) -> int:
        return self.after.count("\n")


def scale_input(
    factor: int, folder: Path, *, base_requests: int = 64, tasks: tuple[str, ...] = ("code", "chat"), seed: int = 7
) -> ScaleInput:
    """factor x the default workload: factor x 64 requests per task, factor x the /metrics lines (engines)."""
    rng = random.Random(seed)
    files = {}
    for task in tasks:
        path = folder / f"{task}-x{factor}.jsonl"
        with open(path, "w") as f:
            for i in range(base_requests * factor):
                f.write(json.dumps(synthetic_record(i, task, rng)) + "\n")
        files[task] = path
    return ScaleInput(
        factor,
        base_requests * factor * len(tasks),
        synthetic_page(factor, requests_done=0),
        synthetic_page(factor, requests_done=base_requests * len(tasks)),
        files,
    )
