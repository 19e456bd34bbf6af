"""The performance phase: `vllm bench serve` at a fixed output length, run through its own entry point in a
forked child of the collector; its progress is read from its own progress bar."""

from __future__ import annotations

import contextlib
import gc
import json
import multiprocessing
import os
import re
import resource
import shlex
from collections.abc import Callable
from pathlib import Path

from specstack import events, interrupts
from specstack.config.workloads import Task
from specstack.measure import goodput
from specstack.measure.chat import CHAT_TEMPLATE_KWARGS, SEED
from specstack.measure.windows import Outcome
from specstack.results import layout
from specstack.results.files import atomic_write_text
from specstack.server.runtime import Server, vllm_executable


def cell_name(
    task: str, repeat: int, *, concurrency: int | None = None, rate: float | None = None, probe: bool = False
) -> str:
    """A bench cell's name (its window is `bench/<name>`, its files `bench/<name>.json|.log|.cmd`): closed loop
    `code-c4-r0` (concurrency 4, repeat 0), open loop `code-rate0.5-r0` (0.5 requests/s), a capacity-search
    probe `code-probe0.75-r0`. The words keep the kinds apart: no name of one kind parses as another."""
    if rate is None:
        return f"{task}-c{concurrency}-r{repeat}"
    return f"{task}-{'probe' if probe else 'rate'}{rate:g}-r{repeat}"


def bench_command(
    server: Server,
    task: Task,
    *,
    concurrency: int | None,
    num_prompts: int,
    output_len: int,
    request_rate: float | None,
    tokenizer: str,
    result_dir: Path,
    result_name: str,
    slo: dict[str, float] | None = None,
    burstiness: float = 1.0,
) -> list[str]:
    """Closed loop: `concurrency` requests in flight (at `request_rate` when finite). Open loop (concurrency
    None): arrivals at `request_rate` (Poisson, or Gamma with `burstiness` != 1), no cap on in-flight requests."""
    cap = [] if concurrency is None else ["--max-concurrency", str(concurrency)]
    shape = [] if burstiness == 1.0 else ["--burstiness", str(burstiness)]
    return [
        vllm_executable(),
        "bench",
        "serve",
        "--backend",
        "openai",
        "--base-url",
        server.base_url,
        "--endpoint",
        "/v1/completions",
        "--model",
        server.served_model_name,
        "--tokenizer",
        tokenizer,
        "--dataset-name",
        "custom",
        "--dataset-path",
        str(task.perf_path),
        "--chat-template-kwargs",
        json.dumps(CHAT_TEMPLATE_KWARGS),
        "--custom-output-len",
        str(output_len),
        "--num-prompts",
        str(num_prompts),
        "--num-warmups",
        "0",  # the collector's own warm-up ran already, outside every window
        *cap,
        "--request-rate",
        "inf" if request_rate is None else str(request_rate),
        *shape,
        "--temperature",
        "0",
        "--top-p",
        "1",
        "--ignore-eos",
        "--seed",
        str(SEED),
        "--percentile-metrics",
        "ttft,tpot,itl,e2el",
        "--metric-percentiles",
        "50,95,99",
        # --save-detailed keeps every request's start time, TTFT, chunk gaps and E2EL: the bundle alone then
        # recomputes every percentile, and stalls and burst reads are seen per request (measure/per_request.py)
        "--save-result",
        "--save-detailed",
        "--result-dir",
        str(result_dir),
        "--result-filename",
        result_name,
        *goodput.bench_args(slo),
    ]


def run_bench(argv: list[str], result_path: Path, log_path: Path, slo: dict[str, float] | None = None) -> Outcome:
    """Run `vllm bench serve` through its own entry point (vllm.benchmarks.serve.main) in a forked child of the
    collector: the same code as the CLI; the child inherits vLLM's ~10 s of imports, paid once per collector
    instead of per cell; and the client's per-request results (it keeps every output for its percentiles,
    ~2.5 KiB per request, docs/load.md) leave with the child instead of growing the collector.
    The equivalent command line is kept beside the result so anyone can rerun the cell by hand."""
    atomic_write_text(log_path.with_suffix(layout.COMMAND_SUFFIX), shlex.join(argv) + "\n")
    from vllm.benchmarks.serve import add_cli_args, main
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    parser = FlexibleArgumentParser()
    add_cli_args(parser)
    args = parser.parse_args(argv[argv.index("serve") + 1 :])
    fork = multiprocessing.get_context("fork")
    cpu = fork.Value("d", -1.0, lock=False)  # the client's CPU seconds, written by it as it exits (cpu_share.py)
    child = fork.Process(target=_bench_child, args=(main, args, log_path, cpu), name="vllm-bench-serve", daemon=True)
    gc.freeze()  # the child's GC then leaves the inherited objects alone, so their pages stay shared (no copy)
    try:
        child.start()
    finally:
        gc.unfreeze()
    try:
        while child.is_alive():
            child.join(0.5)
            _bench_progress(log_path, args.num_prompts)
    except BaseException:  # Ctrl+C reaches both; do not leave the client running
        child.terminate()
        child.join(10)
        raise
    _bench_progress(log_path, args.num_prompts)  # where bench's bar ended
    outcome = _outcome(log_path, result_path, child.exitcode, args, slo)
    outcome.bench_pid, outcome.bench_cpu = child.pid, (cpu.value if cpu.value >= 0 else None)
    return outcome


def _outcome(log_path: Path, result_path: Path, exitcode: int | None, args, slo: dict[str, float] | None) -> Outcome:
    tail = log_path.read_text(errors="replace").splitlines()[-15:] if log_path.exists() else []
    if exitcode != 0:
        reason = next((line for line in reversed(tail) if line.startswith(_BENCH_FAILED)), None)
        return Outcome(error=reason or f"{_BENCH_FAILED} exit code {exitcode}; last lines:\n" + "\n".join(tail))
    if not result_path.exists():
        return Outcome(error="vllm bench serve wrote no result; last lines:\n" + "\n".join(tail))
    bench = json.loads(result_path.read_text())
    if bench.get("failed"):
        return Outcome(bench=bench, error=f"{bench['failed']} of {bench.get('num_prompts')} bench requests failed")
    return Outcome(bench=bench, output_len=args.custom_output_len if args.ignore_eos else None, slo=slo)


_BENCH_FAILED = "vllm bench serve failed:"
_TQDM_COUNT = re.compile(rb"(\d+)/(\d+) \[")


def _bench_progress(log_path: Path, total: int) -> None:
    if events.listening_now():
        done = bench_requests_done(log_path)
        if done is not None:
            events.emit("window.progress", done=done, total=total)


def bench_requests_done(log_path: Path) -> int | None:
    """Requests bench has finished so far, read from its own progress bar (tqdm) at the end of its log."""
    try:
        with open(log_path, "rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - 4096))
            counts = _TQDM_COUNT.findall(f.read())
    except OSError:
        return None
    return int(counts[-1][0]) if counts else None


def _bench_child(main: Callable, args, log_path: Path, cpu) -> None:
    """The forked bench client: output to the cell's log, the failure as its last line, then exit at once
    (the collector's threads and exit handlers are not the child's to run)."""
    os.environ["TOKENIZERS_PARALLELISM"] = "false"  # the tokenizer's thread pool does not survive a fork
    interrupts.default_in_child()
    code = 0
    with open(log_path, "w") as log, contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
        try:
            main(args)
        except SystemExit as e:
            code = 0 if e.code in (0, None) else 1
            if code:
                print(f"{_BENCH_FAILED} SystemExit: {e}", file=log)
        except BaseException as e:  # noqa: BLE001 - any failure fails the window, never the collector
            print(f"{_BENCH_FAILED} {type(e).__name__}: {e}", file=log)
            code = 1
        log.flush()
    cpu.value = own_cpu_seconds()
    os._exit(code)


def own_cpu_seconds() -> float:
    """This process's CPU seconds (user + system, all threads) and its waited-for children's: what a process
    tree that exits inside a window reports of itself (measure/cpu_share.py cannot read a process that is gone)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
