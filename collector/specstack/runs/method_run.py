"""One method, end to end: checks -> inputs -> server -> warm-up -> acceptance -> performance -> stop ->
verdict -> published bundle. Any broken phase marks the run failed with its reason (the bundle is still
written, as `<method>.failed-<time>/`); a cross-check mismatch fails it too unless --allow-mismatch. Whatever
ends a run, of whatever type, is recorded the same way (runs/outcome.py): only a run whose every phase completed
is published ok. One harness measures into a run at a time (results/run_lock.py); what a killed one left is kept
as failed before a method starts (results/bundle.py keep_dead_staging).

Each step is a method of MethodRun, timed with events.step (listeners, such as the harness benchmark, see
where the time goes). Prometheus's view is checked after publishing, off this path (runs/monitoring.py).
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from specstack import events
from specstack.config.serving import Runtime
from specstack.config.workloads import Task
from specstack.measure import bench, chat
from specstack.measure.windows import Outcome, Window, Windows
from specstack.results import layout, run_lock
from specstack.results.bundle import SUMMARY_SCHEMA, MethodBundle, keep_dead_staging, update_manifest
from specstack.results.files import atomic_write_json
from specstack.results.method_tables import write_method_tables
from specstack.results.records import read_records
from specstack.results.summary import JSON, PrometheusView, Provenance, Replication, Server, Summary
from specstack.results.summary import Window as WindowRecord
from specstack.runs import load, outcome, prefix_cache, run_manifest, sampler_probe, server_checks, turns, warm_imports
from specstack.runs.checks import check, synthetic
from specstack.runs.method_summary import finish
from specstack.runs.monitoring import PENDING, Monitoring
from specstack.runs.native_server import NativeServer
from specstack.runs.next_server import NextServer
from specstack.runs.options import Options, load_tasks
from specstack.runs.server_checks import ServerContradiction
from specstack.server import model_identity, observed, provenance, startup
from specstack.server.runtime import Server as LiveServer
from specstack.server.runtime import cancel_held, vllm_executable

if TYPE_CHECKING:
    from specstack.config.methods import ServePlan


console = Console(stderr=True)


def run_method(
    opts: Options,
    *,
    index: int = 1,
    total: int = 1,
    monitoring: Monitoring | None = None,
    held: LiveServer | None = None,
    next_server: NextServer | None = None,
) -> tuple[dict, Path]:
    """Run one method end to end; returns (summary, published folder). Never raises for a failed phase.
    `index` of `total`: its place in a sweep (progress display). Without `monitoring` (a sweep passes one),
    the run has its own and closes it before returning, so the summary holds Prometheus's view.
    A sweep passes `held`, this method's server started held by the method before (released if still this plan's,
    runs/checks.py), and `next_server`, the next method's, started as this server starts (runs/next_server.py)."""
    began = time.monotonic()  # the pre-flight, the run lock and the inputs go into timings["checks"]
    own = monitoring is None
    monitoring = monitoring or Monitoring.for_options(opts)
    run_dir = Path(opts.results_dir) / opts.run_id
    try:
        checked = check(opts, held)
        try:
            with run_lock.held(run_dir):  # before any server starts: a second harness of this run is refused
                for kept in keep_dead_staging(run_dir):
                    console.print(f"[bold yellow]warning[/]: {kept.name}: a killed run's files, kept as failed")
                method = MethodRun(opts, checked.plan, monitoring, held=checked.held, next_server=next_server)
                published = method.run(index, total, began=began)
        finally:
            if checked.held is not None:
                cancel_held(checked.held)  # one never released (the run ended before its start); else nothing
    finally:
        if own:
            monitoring.close()
    return method.written, published


class MethodRun:
    """The steps of one method run, sharing its plan, bundle, summary and server (its life: runs/native_server.py)."""

    console = console

    def __init__(
        self,
        opts: Options,
        plan: ServePlan,
        monitoring: Monitoring,
        held: LiveServer | None = None,
        next_server: NextServer | None = None,
    ):
        """held: the plan's native server, started held while the pre-flight ran (runs/checks.py), released at
        the server's start. next_server: a sweep's next method's, started held as this one starts."""
        self.opts, self.plan, self.monitoring = opts, plan, monitoring
        self.next_server = next_server
        self.name = opts.bundle_name or plan.method  # folder and summary "method" (sweep-k: <method>-k<K>)
        self.run_dir = Path(opts.results_dir) / opts.run_id
        self.labels = {"run_id": opts.run_id, "method": self.name}
        self.windows: Windows | None = None
        self.ending = outcome.Ending()
        self.measured = False  # every phase ran (a failed window included): Prometheus's view can be checked
        self.written: JSON = {}  # the summary.json written, returned by run_method (kept up to date, _view_checked)
        self.checks_span: tuple[float, float] | None = None  # its pre-flight checks, epoch seconds (run's began)
        with events.step("inputs"):
            # bad workload files fail here, before any result folder
            self.tasks: dict[str, Task] = load_tasks(opts, self.run_dir / layout.INPUTS_DIR)
            self.turn_two = turns.TurnTwo(opts.turns, plan, self.run_dir, self.tasks)
            load.check_rates_known(self)  # --rates auto: the baseline's rates exist before this server starts
            self.bundle = MethodBundle(opts.results_dir, opts.run_id, self.name, force=opts.force)
        self.backend = NativeServer(
            opts,
            plan,
            name=self.name,
            run_dir=self.run_dir,
            bundle=self.bundle,
            labels=self.labels,
            interrupted=lambda: self.interrupted,
            console=self.console,
            held=held,
        )
        try:
            self.summary = self._new_summary()
        except BaseException:
            self.bundle.discard()
            raise

    @property
    def interrupted(self) -> bool:
        return self.ending.interrupted

    @property
    def server(self) -> LiveServer | None:
        """The server measured, once started and ready."""
        return self.backend.server

    def run(self, index: int, total: int, began: float | None = None) -> Path:
        """Every phase, then the wind-up, whatever ended them; a signal or an unexpected exception then ends the
        command (outcome.Ending.raise_if_fatal) once the bundle is published as failed. Returns where.
        `began`: time.monotonic() when run_method began (its pre-flight checks); the seconds until now are the
        method's timings["checks"], kept out of timings["total"], which starts here."""
        t0 = time.monotonic()
        if began is not None:
            self._time("checks", t0 - began)
            self.checks_span = (time.time() - (t0 - began), time.time())
        events.emit("method.start", method=self.name, index=index, total=total)
        help_hash = None
        try:
            with events.step("manifest"):
                self._record_run_in_manifest()
            help_hash = provenance.HelpHash(vllm_executable())  # overlaps the server start
            self.turn_two.check_ready()  # a method's turn-2 chats (its baseline's answers) exist: before any server
            self.start_server()
            self.warm_up()
            if self.speculative:  # only spec methods get Prometheus's view (their drafts counter)
                self.monitoring.await_first_sample(self.labels)
            self.acceptance()
            self.sampled()
            self.performance()
            self.measured = True
        except BaseException as e:  # whatever it is: recorded, and the wind-up runs (outcome.py)
            self.summary = self.ending.record(self.summary, e, window_failed=self._window_failed())
        published = self.wind_up(t0, help_hash)
        self.ending.raise_if_fatal(self.name, self.run_dir, published)
        assert published is not None  # else raise_if_fatal raised
        return published

    def wind_up(self, t0: float, help_hash: provenance.HelpHash | None) -> Path | None:
        """The server stopped, what ran described, the bundle published: each step runs whatever broke before it,
        and one that breaks fails the method too, so no server is left running and no bundle stays hidden."""
        for step in (self.stop_server, self.observe_answers, lambda: self.describe(help_hash)):
            try:
                step()
            except BaseException as e:
                self.summary = self.ending.record(self.summary, e)
                if step == self.stop_server:
                    self.backend.kill()
        if help_hash is not None:
            help_hash.cancel()  # a no-op once describe read it
        self._time("total", time.monotonic() - t0)
        try:
            published: Path | None = self.publish()
        except BaseException as e:
            self.summary = self.ending.record(self.summary, e)
            published = self.publish_failed()
        events.emit("method.end", method=self.name, status=self.summary.status, seconds=time.monotonic() - t0)
        return published

    # --- before the server -------------------------------------------------------------------------------

    def _record_run_in_manifest(self) -> None:
        run_manifest.record(self.opts, self.run_dir, self.tasks)

    def _new_summary(self) -> Summary:
        """`speculative_config` is the config the figures come from: the plan's when specstack started the
        server; on the url runtime what the server was observed to run (None until observed). What the run
        asked for is kept apart, under `asked_for`, and never presented as the server's."""
        plan, native = self.plan, self.opts.runtime == Runtime.NATIVE
        return Summary.make(
            schema=SUMMARY_SCHEMA,
            run_id=self.opts.run_id,
            method=self.name,
            label=plan.label,
            base_method=plan.method,
            # --baseline-result names the baseline's result folder; plan.baseline stays the method (turn-2 inputs
            # and auto rates are the baseline method's, shared by its runs on every slot)
            baseline_method=self.opts.baseline_result or plan.baseline,
            status="running",
            error=None,
            speculative_config=plan.speculative_config if native else None,
            speculative_config_source="the plan specstack started" if native else "not observed",
            spec_override=self.opts.spec_override,
            comparable=not synthetic(plan),
            server=Server.make(),
            prefix_caching=prefix_cache.setting(plan, self.opts.prefix_caching),
            asked_for={
                "method": plan.method,
                "source": "services/methods.toml",
                "target": plan.target,
                "argv": plan.argv,
                "env": plan.env,
                "platform": plan.platform,
                "model_set": plan.model_set,
                "speculative_config": plan.speculative_config,
                "spec_override": self.opts.spec_override,
            },
            server_contradictions=None,
            tasks={},
            windows=[],
            timings={},
            replication=Replication.make(**self.opts.replication()),
            prometheus_view=PrometheusView.make(status="not collected", tasks={}),
        )  # filled in as it runs

    # --- the server and the measured phases --------------------------------------------------------------

    def start_server(self) -> None:
        if self.next_server is not None:
            self.next_server.begin()  # its vLLM imports beside this start (runs/next_server.py)
        warm_imports.begin()  # and this process's own, for after the windows (runs/warm_imports.py)
        self.backend.start()
        server = self.server
        assert server is not None  # start() set it, or raised
        self._time("server_ready", server.ready_seconds)
        if server.held_seconds is not None:  # its process imported that long, beside the pre-flight, before it
            self._time("server_held", server.held_seconds)  # was released: server_ready counts from its release
            if self.checks_span is not None:  # of the checks, the seconds its vLLM imports ran beside them: the
                # server's start as much as the harness's (report/time_breakdown.py counts them as the start)
                self._time("server_imports_beside_checks", server.imports_between(*self.checks_span))
        with events.step("server facts", method=self.name):
            self.summary = self.summary.updated(server=Server.from_json(server_checks.server_facts(server, self.plan)))
            self._check_observed()
        # the previous method's Prometheus check must not run beside this one's windows
        with events.step("previous Prometheus check", method=self.name):
            self.monitoring.settle()
        if self.next_server is not None:  # nor the next server's imports
            with events.step("next server's imports", method=self.name):
                self.next_server.settle()
        with events.step("harness imports", method=self.name):  # nor this process's
            warm_imports.settle()
        self.windows = Windows(server, self.bundle, self.monitoring.exporter, self.labels, self.opts.quiet_gap)

    def _window_failed(self) -> bool:
        return self.windows is not None and any(w.status != "ok" for w in self.windows.records)

    def _check_observed(self, *, after_measuring: bool = False) -> None:
        """The server against the method asked for (runs/server_checks.py); what was found goes into the summary,
        raised or not."""
        if self.server is None:
            return
        try:
            self.summary = server_checks.check_observed(
                self.summary, self.server, self.plan, self.opts, after_measuring=after_measuring
            )
        except ServerContradiction as e:
            self.summary = e.summary
            raise

    @property
    def speculative(self) -> bool:
        """Whether answers must carry spec metrics: the plan's on a native server; what the attached server was
        observed to run on the url runtime (the plan's when it revealed nothing)."""
        if self.server is not None and self.server.runtime == Runtime.URL:
            has = observed.speculative(self.summary.server_facts.observed or {"metrics": {}})
            if has is not None:
                return has
        return self.plan.speculative_config is not None

    def warm_up(self) -> None:
        """Short requests in a window of their own: kernels and JIT load off every measured figure."""
        opts, server, windows = self.opts, self.server, self.windows
        assert server is not None and windows is not None  # start_server set both
        rows = [row for task in self.tasks.values() for row in chat.warmup_rows(task, opts.warmup_requests)]
        with self._timed("warmup"):
            windows.run(
                Window("warmup", "warmup"),
                total=len(rows),
                body=lambda: chat.run_requests(
                    server,
                    rows,
                    self.bundle.path(layout.WARMUP_RECORDS),
                    concurrency=1,
                    timeout=opts.request_timeout,
                    speculative=self.speculative,
                ),
            )

    def acceptance(self) -> None:
        opts, server, windows = self.opts, self.server, self.windows
        assert server is not None and windows is not None  # start_server set both
        with self._timed("acceptance"):
            for name, task in self.tasks.items():
                console.print(f"  acceptance phase: {name} ({len(task.acceptance)} requests)")

                def body(task: Task = task) -> Outcome:
                    return chat.run_requests(
                        server,
                        task.acceptance,
                        self.bundle.path(layout.acceptance_records(task.name)),
                        concurrency=opts.acceptance_concurrency,
                        timeout=opts.request_timeout,
                        speculative=self.speculative,
                    )

                windows.run(
                    Window(layout.acceptance_window(name), "acceptance", task=name),
                    total=len(task.acceptance),
                    body=body,
                )
                self.turn_two.measure(self, name)

    def sampled(self) -> None:
        """The acceptance phase again at each --temperatures value: what acceptance is when users sample."""
        opts, server, windows = self.opts, self.server, self.windows
        assert server is not None and windows is not None  # start_server set both
        with self._timed("sampled"):
            for temperature in opts.temperatures:
                for name, task in self.tasks.items():
                    rows = chat.sampled_rows(task, temperature, opts.samples_per_prompt)
                    console.print(f"  sampled phase: {name} at temperature {temperature:g} ({len(rows)} requests)")

                    def body(rows: list[dict] = rows, name: str = name, t: float = temperature) -> Outcome:
                        return chat.run_requests(
                            server,
                            rows,
                            self.bundle.path(layout.sampled_records(name, t)),
                            concurrency=opts.acceptance_concurrency,
                            timeout=opts.request_timeout,
                            speculative=self.speculative,
                        )

                    windows.run(
                        Window(layout.sampled_window(name, temperature), "sampled", task=name),
                        total=len(rows),
                        body=body,
                    )

    def performance(self) -> None:
        opts = self.opts
        with self._timed("bench"):
            for name, task in [] if opts.skip_bench else self.tasks.items():
                for c in opts.concurrencies:
                    for r in range(opts.repeats):
                        console.print(f"  performance phase: {name} concurrency {c} repeat {r + 1}/{opts.repeats}")
                        self.bench_cell(task, r, concurrency=c)
                load.run_open_loop(self, task)  # --rates: open-loop cells, then the --capacity search
        assert self.windows is not None  # start_server set it
        self.windows.finish()

    def bench_cell(
        self, task: Task, repeat: int, *, concurrency: int | None = None, rate: float | None = None, probe: bool = False
    ) -> tuple[Window, Outcome]:
        """One bench window: closed loop at `concurrency` (at --request-rate), or open loop at `rate` (no cap)."""
        opts, server, bundle = self.opts, self.server, self.bundle
        assert server is not None and self.windows is not None  # start_server set both
        cell = bench.cell_name(task.name, repeat, concurrency=concurrency, rate=rate, probe=probe)
        cap = concurrency if rate is None else opts.rates_max_concurrency  # open loop: uncapped unless asked
        argv = bench.bench_command(
            server,
            task,
            concurrency=cap,
            num_prompts=opts.num_prompts,
            output_len=opts.perf_output_len,
            request_rate=opts.request_rate if rate is None else rate,
            burstiness=1.0 if rate is None else opts.burstiness,
            tokenizer=server.root_model or self.plan.target,
            result_dir=bundle.path(layout.BENCH_DIR),
            result_name=Path(layout.bench_file(cell)).name,
            slo=opts.slo,
        )
        window = Window(
            layout.bench_window(cell),
            "bench",
            task=task.name,
            concurrency=cap,
            repeat=repeat,
            request_rate=rate,
            load="probe" if probe else "rate" if rate is not None else "concurrency",
        )
        return self.windows.run(
            window,
            total=opts.num_prompts,
            body=lambda: bench.run_bench(
                argv, bundle.path(layout.bench_file(cell)), bundle.path(layout.bench_log(cell)), opts.slo
            ),
        )

    def bench_result(self, cell: str) -> dict | None:
        return _load(self.bundle.path(layout.bench_file(cell))) or None

    @contextlib.contextmanager
    def _timed(self, key: str) -> Iterator[None]:
        """A step whose seconds also go into summary["timings"][key]."""
        t = time.monotonic()
        try:
            with events.step(key, method=self.name):
                yield
        finally:
            self._time(key, time.monotonic() - t)

    def _time(self, key: str, seconds: float | None) -> None:
        self.summary = self.summary.updated(timings={**(self.summary.timings or {}), key: seconds})

    # --- after the measurements --------------------------------------------------------------------------

    def stop_server(self) -> None:
        if self.windows is not None:
            self.summary = self.summary.updated(
                windows=[WindowRecord.from_json(w.to_dict()) for w in self.windows.records]
            )
        self.backend.stop()
        if self.backend.stop_problem is not None:  # the measurements stand; the sweep's next start waits for the port
            self.summary = self.summary.updated(
                server=self.summary.server_facts.merged({"stop_problem": self.backend.stop_problem})
            )

    def observe_answers(self) -> None:
        """What the answers' metrics.speculative_decoding revealed (K, drafts per step <= K), beside what the
        endpoints did; on the url runtime a contradiction only they show fails the run (or is recorded)."""
        server = self.summary.server_facts
        if server.observed is None:
            return
        # staging paths as they are (bundle.path() would create an empty acceptance/ in a bundle never measured)
        files = [self.bundle.staging / layout.WARMUP_RECORDS] + [
            self.bundle.staging / layout.acceptance_records(t) for t in self.tasks
        ]
        specs = [r["spec"] for path in files for r in read_records(path) if not r["error"]]
        seen = {**server.observed, "responses": observed.spec_from_responses(specs)}
        self.summary = self.summary.updated(server=server.updated(observed=seen))
        self._check_observed(after_measuring=True)

    def describe(self, help_hash: provenance.HelpHash | None) -> None:
        """What exactly ran: the flag list's hash, the client's vLLM, the GPU host's facts, the server log's."""
        with events.step("provenance", method=self.name):
            if help_hash is not None and (self.server is None or self.windows is None):
                help_hash.cancel()  # nothing was measured; do not keep the user waiting for it
            self.summary = self.summary.updated(
                provenance=Provenance.make(
                    help_all=help_hash.result() if help_hash is not None else None,
                    vllm_client=provenance.client_vllm_version(),
                    # whose flag list that is: on the url runtime the local vllm's, not the attached server's
                    help_all_of="the vllm that served (started by specstack)"
                    if self.opts.runtime == Runtime.NATIVE
                    else "the local vllm (the bench client); the attached server's flags are unknown",
                    # written on the GPU host by `make run` (container digests, nvidia-smi, HF snapshot hashes)
                    # before the collector started; absent for native runs
                    host=self.backend.host_facts(),
                    # the checkpoints a server specstack started read (reproduce checks them); unknown when attached
                    models=model_identity.of_plan(self.plan) if self.opts.runtime == Runtime.NATIVE else None,
                )
            )
            log = self.backend.log_file()  # compose: the lines of this start the host saved (`make run`)
            if log.exists():
                text = log.read_text(errors="replace")
                server = self.summary.server_facts.merged(provenance.log_facts(text))
                # load, compile, warm-up, capture
                self.summary = self.summary.updated(server=server.merged({"startup": startup.phases(text)}))
                self.backend.server_log()  # the bundle holds the server log on every path
            self._check_runner()

    def _check_runner(self) -> None:
        """A server whose log shows another model runner than methods.toml pins fails: its comparison would
        also compare runners. --allow-mismatch keeps it (recorded either way)."""
        server, pinned = self.summary.server_facts, self.plan.model_runner
        self.summary = self.summary.updated(server=server.merged({"model_runner_pinned": pinned}))
        ran = server.model_runner
        if pinned and ran and ran != pinned and self.summary.error is None and not self.opts.allow_mismatch:
            self.summary = self.summary.updated(
                error=(
                    f"the server ran Model Runner {ran}, methods.toml pins {pinned} (VLLM_USE_V2_MODEL_RUNNER): its "
                    "comparison would also compare runners. Check the server's environment, or rerun with "
                    "--allow-mismatch to keep it"
                )
            )

    def publish(self) -> Path:
        """Verdict, tables and summary into the staged folder, published as `<method>/` only if ok; then
        Prometheus's view is checked in the background."""
        bundle = self.bundle
        check_view = self.measured and self.speculative and self.monitoring.prometheus_url
        if check_view:  # on disk until the check has run: a run stopped before it says so
            self.summary = self.summary.updated(prometheus_view=PrometheusView.from_json(PENDING))
        with events.step("sampler probe", method=self.name):  # the server is stopped: it times nothing of it
            if not self.interrupted:  # an interrupted run's cleanup stays short (native_server.INTERRUPT_GRACE)
                self.summary = sampler_probe.record(
                    self.summary,
                    bundle,
                    temperatures=self.opts.temperatures,
                    runtime=self.opts.runtime,
                    speculative=self.speculative,
                )
        with events.step("verdict and bundle", method=self.name):
            self.summary = summary = finish(
                self.summary, self.tasks, bundle, self.opts.allow_mismatch, self.opts.temperatures, self.opts.slo
            )
            bundle.write_text(layout.PACKAGES_FILE, "\n".join(provenance.packages()) + "\n")
            write_method_tables(bundle.staging, summary)
            self.ending.write_traceback(bundle.staging)
            self.written = bundle.write_summary(summary)  # its one conversion to JSON
            published = bundle.finalize(summary.status == "ok")
            update_manifest(
                self.run_dir,
                methods={self.name: {"status": summary.status, "dir": published.name, "error": summary.error}},
            )
        if check_view:
            self.monitoring.check_view_later(summary, published, self.labels, then=self._view_checked)
        return published

    def _view_checked(self, summary: Summary) -> None:
        """Prometheus's view, checked after publishing, into the summary run_method returned (a sweep's list of
        summaries holds that dict)."""
        self.summary = summary
        self.written.update(summary.to_json())

    def publish_failed(self) -> Path | None:
        """publish() broke: the bundle as far as it got, kept as failed (demoted if it was already published), with
        the summary as far as it got; on a disk too full even for that, the staging folder is removed."""
        bundle = self.bundle
        self.summary = summary = self.summary.updated(status="failed")
        folder = bundle.staging if bundle.published is None else bundle.demote()
        for write in (lambda: self.ending.write_traceback(folder), lambda: self._write_summary(folder)):
            with contextlib.suppress(Exception):  # the summary as JSON: its record may be what broke
                write()
        try:
            published = folder if bundle.published is not None else bundle.finalize(False)
        except OSError as e:
            self.summary = self.ending.record(self.summary, e)
            bundle.discard()
            return None
        try:
            update_manifest(
                self.run_dir, methods={self.name: {"status": "failed", "dir": published.name, "error": summary.error}}
            )
        except OSError as e:
            self.summary = self.ending.record(self.summary, e)
        return published

    def _write_summary(self, folder: Path) -> None:
        self.written = self.summary.to_json()
        atomic_write_json(folder / layout.SUMMARY_FILE, self.written)


def _load(path: Path) -> dict:
    return json.loads(path.read_text()) if path.exists() else {}
