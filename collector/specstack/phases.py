"""The phases of a method run and the measured window around each.

Order: warm-up (never inside a measured window) -> acceptance (natural stops, per-request metrics kept)
-> performance (`vllm bench serve`, fixed output length). Every window is bracketed by /metrics
snapshots; its counter deltas are reconciled with what the responses or bench reported.
"""
from __future__ import annotations

import contextlib
import gc
import json
import multiprocessing
import os
import re
import shlex
import subprocess
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

import requests

from . import accounting, events, snapshots
from . import metric_names as m
from .bundle import MethodBundle, atomic_write_text, atomic_writer
from .runtime import Server, vllm_executable
from .workloads import Task

SEED = 42
CHAT_TEMPLATE_KWARGS = {"enable_thinking": False}


@dataclass
class Window:
    name: str
    phase: str
    task: str | None = None
    concurrency: int | None = None
    repeat: int | None = None
    start: float | None = None
    end: float | None = None
    status: str = "ok"              # ok | failed (the phase broke) | invalid (counters unusable)
    reason: str | None = None
    counters: dict = field(default_factory=dict)     # raw deltas of the snapshot families
    counters_before: dict | None = None              # cumulative values at the two snapshots
    counters_after: dict | None = None
    settled_at: float | None = None                  # when the after-snapshot was read
    from_counters: dict | None = None                # acceptance seen by the counters
    from_responses: dict | None = None               # acceptance summed over responses
    checks: list[dict] = field(default_factory=list)

    @property
    def checks_ok(self) -> bool:
        return all(c["ok"] for c in self.checks)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["checks_ok"] = self.checks_ok
        return d


@dataclass
class Outcome:
    """What a phase body hands back to its window."""
    reported: accounting.Acceptance | None = None   # request phases: Σ per-request metrics.speculative_decoding
    summed_requests: bool = False                   # request phases: `reported` is complete and can be checked
    bench: dict | None = None                       # vllm bench serve result JSON
    error: str | None = None
    requests_sent: int | None = None                # request phases: how many the window sent
    output_len: int | None = None                   # bench: the fixed length of every answer (--ignore-eos)


class Windows:
    """Runs phase bodies inside snapshot brackets and keeps every window's record."""

    def __init__(self, server: Server, bundle: MethodBundle, exporter=None, labels: dict | None = None,
                 quiet_gap: float = 0.0):
        self.server, self.bundle, self.exporter = server, bundle, exporter
        self.labels = labels or {}
        # Idle seconds before each window and after the last: with a gap longer than Prometheus's scrape interval a
        # scrape lands between windows, so its samples can be attributed to exactly one window. 0 in normal runs.
        self.quiet_gap = quiet_gap
        self.http = requests.Session()
        self.records: list[Window] = []

    def _snapshot(self, name: str, when: str) -> snapshots.Snapshot:
        snap = snapshots.settled(self.server.base_url, self.http)
        atomic_write_text(self.bundle.path(f"snapshots/{name.replace('/', '_')}.{when}.prom"), snap.raw)
        return snap

    def finish(self) -> None:
        time.sleep(self.quiet_gap)

    def _with_exit(self, reason: str, grace: float = 0.0) -> str:
        """Lead with the server's exit when it died: that is the cause; the failed requests are its effect.
        `grace`: seconds to let a server that just reset a connection finish dying."""
        process = self.server.process
        if process is None:
            return reason
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            return reason
        return f"vLLM server exited with code {process.returncode} during the window; {reason}"

    def run(self, window: Window, body: Callable[[], Outcome], total: int | None = None) -> tuple[Window, Outcome]:
        """Run `body` inside the window's snapshots; `total` (requests it sends) is for the progress display."""
        events.emit("window.start", name=window.name, phase=window.phase, total=total)
        try:
            return self._run(window, body)
        finally:
            events.emit("window.end", name=window.name, status=window.status)

    def _run(self, window: Window, body: Callable[[], Outcome]) -> tuple[Window, Outcome]:
        self.records.append(window)
        outcome = Outcome()
        time.sleep(self.quiet_gap)
        try:
            before = self._snapshot(window.name, "before")
        except requests.RequestException as e:
            window.status, window.reason = "failed", f"could not read /metrics before the window: {e}"
            return window, outcome
        if self.exporter is not None:
            self.exporter.open(window.phase, task=window.task or "", concurrency=str(window.concurrency or ""),
                               **self.labels)
        window.start = time.time()
        try:
            outcome = body()
        except Exception as e:  # the phase broke: record why, keep the earlier windows intact
            outcome = Outcome(error=f"{type(e).__name__}: {e}")
        window.end = time.time()
        if self.exporter is not None:
            self.exporter.close()
        if outcome.error:
            window.status, window.reason = "failed", self._with_exit(outcome.error)
        try:
            after = self._snapshot(window.name, "after")
            window.counters_before, window.counters_after = before.counters, after.counters
            window.settled_at = after.taken_at
            delta = snapshots.diff(before, after)
        except requests.RequestException as e:
            unreachable = f"/metrics unreachable after: {e}"
            # The server may die between the last answer and this snapshot: name the death, not just the symptom.
            window.status = "failed"
            window.reason = (window.reason + "; " + unreachable if window.reason
                             else self._with_exit(unreachable, grace=2.0))
            return window, outcome
        except snapshots.ServerRestarted as e:
            window.status, window.reason = "invalid", str(e)
            return window, outcome
        window.counters = {"counters": delta.counters, "split": delta.split}
        finished = int(sum(delta.split.get(m.REQUEST_SUCCESS, {}).values()))
        if window.status == "failed" and outcome.requests_sent and finished < outcome.requests_sent:
            # Say why counters and answers cannot agree. (vLLM counts a request the client left as neither
            # finished nor aborted: the frontend drops it without a finish reason.)
            window.reason += (f"; vLLM finished {finished} of the {outcome.requests_sent} requests sent in this "
                              "window (a request a client or gateway gave up on leaves drafts in the counters "
                              "and no answer), so no cross-check")
        counted = accounting.from_delta(delta)
        window.from_counters = counted.to_dict() if counted else None
        checks: list[accounting.Check] = []
        if outcome.summed_requests and window.status == "ok":
            window.from_responses = outcome.reported.to_dict() if outcome.reported else None
            checks += accounting.crosscheck_requests(outcome.reported, counted)
        if outcome.bench is not None and window.status == "ok":
            checks += accounting.crosscheck_bench_answers(outcome.bench, finished, delta.get(m.GENERATION_TOKENS),
                                                          outcome.output_len)
            checks += accounting.crosscheck_bench(outcome.bench, counted)
        window.checks = [c.to_dict() for c in checks]
        return window, outcome


# --- request phases (warm-up, acceptance) -------------------------------------------------------------

def chat_payload(served_model_name: str, prompt: str, max_tokens: int) -> dict:
    # Greedy, one sequence, no stop strings: the per-request metrics are only complete for n=1 requests
    # that end on EOS or length (a stop string ends them in the frontend, without metrics).
    return {"model": served_model_name, "messages": [{"role": "user", "content": prompt}],
            "temperature": 0, "top_p": 1, "seed": SEED, "n": 1, "max_tokens": max_tokens, "stream": False,
            "chat_template_kwargs": CHAT_TEMPLATE_KWARGS}


def send_chat(http: requests.Session, server: Server, row: dict, timeout: float) -> dict:
    payload = chat_payload(server.served_model_name, row["prompt"], row["max_tokens"])
    record = {"id": row["id"], "request": payload}
    start = time.perf_counter()
    try:
        r = http.post(f"{server.base_url}/v1/chat/completions", json=payload, timeout=timeout)
        record["http_status"] = r.status_code
        body = r.json() if r.headers.get("content-type", "").startswith("application/json") else {"text": r.text}
        record["response"] = body
        if r.status_code != 200:
            record["error"] = f"HTTP {r.status_code}: {str(body)[:300]}"
    except requests.RequestException as e:
        record["error"] = f"{type(e).__name__}: {e}"
    record["seconds"] = time.perf_counter() - start
    return record


def request_fields(record: dict) -> dict:
    """The per-request facts the accounting and the report use."""
    body = record.get("response") or {}
    choice = (body.get("choices") or [{}])[0]
    return {"id": record["id"], "text": (choice.get("message") or {}).get("content"),
            "finish_reason": choice.get("finish_reason"), "usage": body.get("usage"),
            "spec": (body.get("metrics") or {}).get("speculative_decoding"), "error": record.get("error"),
            "seconds": record.get("seconds")}


def run_requests(server: Server, rows: list[dict], out_path: Path, *, concurrency: int, timeout: float,
                 speculative: bool) -> Outcome:
    """Send the rows; each answer is streamed to out_path as it is taken in order and folded into running
    sums (memory stays flat for thousands of requests); the file appears only complete."""
    reported, failed, missing, first_error = None, [], [], None
    with requests.Session() as http, ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool, \
            atomic_writer(out_path) as out:
        for done, record in enumerate(_in_order(pool, lambda row: send_chat(http, server, row, timeout), rows,
                                                4 * concurrency), start=1):
            out.write((json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8"))
            events.emit("window.progress", done=done, total=len(rows))
            fields = request_fields(record)
            if fields["error"]:
                failed.append(fields["id"])
                first_error = first_error or fields["error"]
            elif speculative and fields["spec"] is None:
                missing.append(fields["id"])
            reported = accounting.add_request(reported, fields["spec"])
    if failed:
        return Outcome(error=f"{len(failed)} of {len(rows)} requests failed (first: {first_error}); ids: "
                             f"{', '.join(failed[:10])}", requests_sent=len(rows))
    if missing:
        return Outcome(error=f"{len(missing)} responses lack metrics.speculative_decoding (ids: "
                             f"{', '.join(missing[:10])}); the server must run with "
                             "--per-request-spec-decode-metrics and requests must be n=1", requests_sent=len(rows))
    return Outcome(reported=reported, summed_requests=True, requests_sent=len(rows))


def _in_order(pool: ThreadPoolExecutor, fn: Callable, items: list, ahead: int):
    """pool.map with at most `ahead` requests queued or running: map() would hold a future per row."""
    pending: deque = deque()
    for item in items:
        pending.append(pool.submit(fn, item))
        if len(pending) >= ahead:
            yield pending.popleft().result()
    while pending:
        yield pending.popleft().result()


def read_records(path: Path) -> list[dict]:
    """The request_fields of every record of an acceptance/warm-up JSONL file ([] if absent)."""
    if not path.exists():
        return []
    return [request_fields(json.loads(line)) for line in path.read_text().splitlines() if line.strip()]


def warmup_rows(task: Task, count: int) -> list[dict]:
    """Short requests on the task's own prompts: they load kernels and JIT (numba for ngram) off the clock."""
    return [{"id": f"warmup-{task.name}-{i}", "prompt": task.acceptance[i % len(task.acceptance)]["prompt"],
             "max_tokens": 16} for i in range(count)]


# --- performance phase ------------------------------------------------------------------------------

def bench_command(server: Server, task: Task, *, concurrency: int, num_prompts: int, output_len: int,
                  request_rate: float | None, tokenizer: str, result_dir: Path, result_name: str) -> list[str]:
    return [
        vllm_executable(), "bench", "serve",
        "--backend", "openai", "--base-url", server.base_url, "--endpoint", "/v1/completions",
        "--model", server.served_model_name, "--tokenizer", tokenizer,
        "--dataset-name", "custom", "--dataset-path", str(task.perf_path),
        "--chat-template-kwargs", json.dumps(CHAT_TEMPLATE_KWARGS),
        "--custom-output-len", str(output_len), "--num-prompts", str(num_prompts),
        "--num-warmups", "0",  # the collector's own warm-up ran already, outside every window
        "--max-concurrency", str(concurrency),
        "--request-rate", "inf" if request_rate is None else str(request_rate),
        "--temperature", "0", "--top-p", "1", "--ignore-eos", "--seed", str(SEED),
        "--percentile-metrics", "ttft,tpot,itl,e2el", "--metric-percentiles", "50,95,99",
        "--save-result", "--result-dir", str(result_dir), "--result-filename", result_name,
    ]


def run_bench(argv: list[str], result_path: Path, log_path: Path) -> Outcome:
    """Run `vllm bench serve` through its own entry point (vllm.benchmarks.serve.main) in a forked child of the
    collector: the same code as the CLI; the child inherits vLLM's ~10 s of imports, paid once per collector
    instead of per cell; and the client's per-request results (it keeps every output for its percentiles,
    ~2.5 KiB per request, docs/load.md) leave with the child instead of growing the collector.
    The equivalent command line is kept beside the result so anyone can rerun the cell by hand."""
    atomic_write_text(log_path.with_suffix(".cmd"), shlex.join(argv) + "\n")
    from vllm.benchmarks.serve import add_cli_args, main
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    parser = FlexibleArgumentParser()
    add_cli_args(parser)
    args = parser.parse_args(argv[argv.index("serve") + 1:])
    child = multiprocessing.get_context("fork").Process(target=_bench_child, args=(main, args, log_path),
                                                        name="vllm-bench-serve", daemon=True)
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
    tail = log_path.read_text(errors="replace").splitlines()[-15:] if log_path.exists() else []
    if child.exitcode != 0:
        reason = next((line for line in reversed(tail) if line.startswith(_BENCH_FAILED)), None)
        return Outcome(error=reason or f"{_BENCH_FAILED} exit code {child.exitcode}; last lines:\n" + "\n".join(tail))
    if not result_path.exists():
        return Outcome(error="vllm bench serve wrote no result; last lines:\n" + "\n".join(tail))
    bench = json.loads(result_path.read_text())
    if bench.get("failed"):
        return Outcome(bench=bench, error=f"{bench['failed']} of {bench.get('num_prompts')} bench requests failed")
    return Outcome(bench=bench, output_len=args.custom_output_len if args.ignore_eos else None)


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


def _bench_child(main: Callable, args, log_path: Path) -> None:
    """The forked bench client: output to the cell's log, the failure as its last line, then exit at once
    (the collector's threads and exit handlers are not the child's to run)."""
    os.environ["TOKENIZERS_PARALLELISM"] = "false"  # the tokenizer's thread pool does not survive a fork
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
    os._exit(code)
