"""Every metric name specstack reads or exposes, in one module: vLLM 0.32.0's and the run-window exporter's.

Names are as exposed on /metrics (counters carry the `_total` suffix). Sources:
vllm/v1/spec_decode/metrics.py and vllm/v1/metrics/loggers.py of vLLM 0.32.0.
"""

PREFIX = "vllm:"

# Speculative decoding counters (registered only when the server has a speculative config).
SPEC_NUM_DRAFTS = "vllm:spec_decode_num_drafts"  # +1 per (request, step) with >=1 draft
SPEC_NUM_DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens"  # drafted tokens (grammar-invalid excluded)
SPEC_NUM_ACCEPTED_TOKENS = "vllm:spec_decode_num_accepted_tokens"  # accepted drafts, bonus token excluded
SPEC_ACCEPTED_PER_POS = "vllm:spec_decode_num_accepted_tokens_per_pos"  # label `position`, 0-based
SPEC_COUNTERS = (SPEC_NUM_DRAFTS, SPEC_NUM_DRAFT_TOKENS, SPEC_NUM_ACCEPTED_TOKENS, SPEC_ACCEPTED_PER_POS)
SPEC_PREFIX = "vllm:spec_decode"

# Engine counters the collector diffs per phase (context for the spec counters).
GENERATION_TOKENS = "vllm:generation_tokens"
PROMPT_TOKENS = "vllm:prompt_tokens"
NUM_PREEMPTIONS = "vllm:num_preemptions"
REQUEST_SUCCESS = "vllm:request_success"  # label finished_reason
ENGINE_COUNTERS = (GENERATION_TOKENS, PROMPT_TOKENS, NUM_PREEMPTIONS, REQUEST_SUCCESS)

# Prefix cache counters, in tokens (vllm/v1/metrics/loggers.py): queries = prompt tokens looked up in the cache
# at admission, hits = those found cached. Both exist with caching off, and queries then stay 0.
PREFIX_CACHE_QUERIES = "vllm:prefix_cache_queries"
PREFIX_CACHE_HITS = "vllm:prefix_cache_hits"
PREFIX_CACHE_COUNTERS = (PREFIX_CACHE_QUERIES, PREFIX_CACHE_HITS)

# Gauges and info.
NUM_REQUESTS_RUNNING = "vllm:num_requests_running"
NUM_REQUESTS_WAITING = "vllm:num_requests_waiting"
KV_CACHE_USAGE = "vllm:kv_cache_usage_perc"
CACHE_CONFIG_INFO = "vllm:cache_config_info"  # labels carry num_gpu_blocks, block_size, ...

# Histograms (series carry _bucket/_sum/_count).
TIME_TO_FIRST_TOKEN = "vllm:time_to_first_token_seconds"
INTER_TOKEN_LATENCY = "vllm:inter_token_latency_seconds"  # per engine step, not per token
TIME_PER_OUTPUT_TOKEN = "vllm:request_time_per_output_token_seconds"
E2E_LATENCY = "vllm:e2e_request_latency_seconds"

# Families a snapshot keeps; everything else on /metrics is skipped before parsing.
SNAPSHOT_FAMILIES = SPEC_COUNTERS + ENGINE_COUNTERS + PREFIX_CACHE_COUNTERS + (CACHE_CONFIG_INFO,)

# Suffixes a counter family's sample names carry on /metrics (prometheus_client).
COUNTER_SUFFIXES = ("_total", "_created")


def family(name: str) -> str:
    """The family a sample (or TYPE line) name on /metrics belongs to: COUNTER_SUFFIXES dropped."""
    for suffix in COUNTER_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


# Labels that identify a server process rather than a measurement; summed over.
ENGINE_LABEL = "engine"
POSITION_LABEL = "position"

# --- exposed by the collector's run-window exporter (measure/exporter.py), scraped as job `specstack` ---
# Gauges (no suffix); labels WINDOW_LABELS; task and concurrency are "" when not applicable.
WINDOW_ACTIVE = "specstack_window_active"  # 1 while the window is open, 0 after
WINDOW_START = "specstack_window_start_timestamp_seconds"  # Unix time the window opened
WINDOW_END = "specstack_window_end_timestamp_seconds"  # Unix time it closed (absent while open)
WINDOW_METRICS = (WINDOW_ACTIVE, WINDOW_START, WINDOW_END)
WINDOW_LABELS = ("run_id", "method", "phase", "task", "concurrency")
SCRAPE_JOB = "specstack"  # the Prometheus job that scrapes the exporter

# Phase names the dashboards colour separately; any other phase is drawn as a bench window.
PHASE_WARMUP = "warmup"
PHASE_ACCEPTANCE = "acceptance"
PHASE_BENCH = "bench"
