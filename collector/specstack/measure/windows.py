"""Measured windows: each phase body runs between two settled /metrics snapshots, and the window's counter
deltas are reconciled with what the responses or bench reported (the direct diff: the run's verdict).

Order in a method run: warm-up (its own window, never a measured figure) -> acceptance (no stop strings,
per-request metrics kept) -> performance (`vllm bench serve`, fixed output length).
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import requests

from specstack import events, interrupts
from specstack.config import metric_names as m
from specstack.measure import accounting, categories, cpu_share, goodput, snapshots
from specstack.results import layout
from specstack.results.bundle import MethodBundle
from specstack.results.files import atomic_write_text
from specstack.server.runtime import Server, ServerError


@dataclass
class Window:
    name: str
    phase: str
    task: str | None = None
    concurrency: int | None = None
    repeat: int | None = None
    request_rate: float | None = None  # bench open loop: arrivals per second (concurrency None: no cap)
    load: str | None = None  # bench: "concurrency" (closed loop), "rate" (open loop) or "probe" (capacity)
    start: float | None = None
    end: float | None = None
    status: str = "ok"  # ok | failed (the phase broke) | invalid (counters unusable)
    reason: str | None = None
    counters: dict[str, Any] = field(default_factory=dict)  # raw deltas of the snapshot families
    counters_before: dict[str, Any] | None = None  # cumulative values at the two snapshots
    counters_after: dict[str, Any] | None = None
    settled_at: float | None = None  # when the after-snapshot was read
    from_counters: dict[str, Any] | None = None  # acceptance seen by the counters
    from_responses: dict[str, Any] | None = None  # acceptance summed over responses
    by_category: dict[str, Any] | None = None  # the same sums split by a dataset's category
    checks: list[dict[str, Any]] = field(default_factory=list)
    # the host's 1-minute load average at open and close, and its cores: other work on the machine shows here
    host_load: dict[str, Any] | None = None
    # CPU seconds of the server's tree, the bench client's, the collector's and every other process in the window
    # (measure/cpu_share.py `attribute`): the report's busy-host and client-bound marks read this, not host_load
    cpu: dict[str, Any] | None = None

    @property
    def checks_ok(self) -> bool:
        return all(c["ok"] for c in self.checks)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["checks_ok"] = self.checks_ok
        return d


@dataclass
class Outcome:
    """What a phase body hands back to its window."""

    reported: accounting.Acceptance | None = None  # request phases: Σ per-request metrics.speculative_decoding
    summed_requests: bool = False  # request phases: `reported` is complete and can be checked
    bench: dict[str, Any] | None = None  # vllm bench serve result JSON
    error: str | None = None
    requests_sent: int | None = None  # request phases: how many the window sent
    output_len: int | None = None  # bench: the fixed length of every answer (--ignore-eos)
    by_category: categories.CategorySums | None = None  # request phases: `reported` split by category
    slo: dict[str, float] | None = None  # bench: the goodput targets (--slo), checked against bench's
    bench_pid: int | None = None  # bench: the client's process (forked, gone by the close)
    bench_cpu: float | None = None  # bench: the CPU seconds the client reported as it exited


class Windows:
    """Runs phase bodies inside snapshot brackets and keeps every window's record."""

    def __init__(
        self,
        server: Server,
        bundle: MethodBundle,
        exporter=None,
        labels: dict[str, Any] | None = None,
        quiet_gap: float = 0.0,
    ):
        self.server, self.bundle, self.exporter = server, bundle, exporter
        self.labels = labels or {}
        # Idle seconds before each window and after the last: with a gap longer than Prometheus's scrape interval a
        # scrape lands between windows, so its samples can be attributed to exactly one window. 0 in normal runs.
        self.quiet_gap = quiet_gap
        self.http = requests.Session()
        self.records: list[Window] = []
        # the last window's after-snapshot: the next window's before agrees with it after one fetch (snapshots.py)
        self.last_after: snapshots.Snapshot | None = None

    def _snapshot(
        self, name: str, when: str, finishes: tuple[snapshots.Snapshot, int] | None = None
    ) -> snapshots.Snapshot:
        """`finishes`: at a window's close, its before-snapshot and the requests it saw answered (snapshots.py)."""
        wall, cpu = time.perf_counter(), time.process_time()
        last = self.last_after if when == "before" else None
        self.last_after = None  # used once: a window that fails before its after starts the next one afresh
        snap = snapshots.settled(self.server.base_url, self.http, last=last, finishes=finishes)
        if when == "after":
            self.last_after = snap
        atomic_write_text(self.bundle.path(layout.snapshot(name, when)), snap.raw)
        events.emit(
            "window.snapshot",
            name=name,
            when=when,
            seconds=time.perf_counter() - wall,
            cpu=time.process_time() - cpu,
            fetches=snap.fetches,
        )
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
        except KeyboardInterrupt as e:  # a signal (interrupts.py): the window says so, not "ok" with no end
            window.status, window.reason = "failed", interrupts.reason(e).split(";")[0]
            raise
        finally:
            events.emit("window.end", name=window.name, status=window.status)

    def _cpu(self, window: Window, before: cpu_share.Table | None, outcome: Outcome) -> dict[str, Any] | None:
        """Who used the CPU in the window (cpu_share.py); None where psutil could not read the process table."""
        after = _cpu_snapshot()
        if before is None or after is None:
            return None
        process = self.server.process
        unknown = (
            {}
            if process is not None
            else {
                "server": f"the server has no local process here (runtime {self.server.runtime}): its CPU, if it runs "
                "on this host, cannot be told from other processes'"
            }
        )
        roots = {
            "server": process.pid if process is not None else None,
            "collector": os.getpid(),
            "bench": outcome.bench_pid if window.phase == "bench" else None,
        }
        reported = {"bench": outcome.bench_cpu} if window.phase == "bench" and outcome.bench_cpu is not None else {}
        out = cpu_share.attribute(before, after, roots, cores=os.cpu_count(), reported=reported, unknown=unknown)
        if roots["bench"] is not None and not reported:  # the client died without reporting: not 0, unknown
            out["bench"] = out["bench_share_of_core"] = None
        return out

    def _verify_server(self, window: Window, status: str, when: str) -> None:
        """The server is still the one this run started (runtime.Server.verify); else the window gets `status`
        with the reason and the method stops (ServerError)."""
        try:
            self.server.verify(when)
        except ServerError as e:
            window.status, window.reason = status, str(e)
            raise

    def _run(self, window: Window, body: Callable[[], Outcome]) -> tuple[Window, Outcome]:
        self.records.append(window)
        outcome = Outcome()
        time.sleep(self.quiet_gap)
        self._verify_server(window, "failed", f"when window {window.name} was to open")
        try:
            before = self._snapshot(window.name, "before")
        except requests.RequestException as e:
            window.status, window.reason = "failed", f"could not read /metrics before the window: {e}"
            return window, outcome
        # One clock reading for the record and the exporter: Prometheus then stores this window's exact times.
        window.start = time.time()
        if self.exporter is not None:
            self.exporter.open(
                window.phase,
                task=window.task or "",
                concurrency=str(window.concurrency or ""),
                at=window.start,
                **self.labels,
            )
        window.host_load = {"cores": os.cpu_count(), "open": _load1()}
        cpu_before = _cpu_snapshot()
        events.emit("window.open", name=window.name, phase=window.phase)
        try:
            outcome = body()
        except Exception as e:  # the phase broke: record why, keep the earlier windows intact
            outcome = Outcome(error=f"{type(e).__name__}: {e}")
        window.end = time.time()
        if self.exporter is not None:
            self.exporter.close(at=window.end)
        window.host_load["close"] = _load1()
        window.cpu = self._cpu(window, cpu_before, outcome)
        events.emit("window.close", name=window.name, phase=window.phase, error=outcome.error, bench=outcome.bench)
        if outcome.error:
            window.status, window.reason = "failed", self._with_exit(outcome.error)
        try:
            answered = _answered(outcome)
            after = self._snapshot(window.name, "after", None if answered is None else (before, answered))
            window.counters_before, window.counters_after = before.counters, after.counters
            window.settled_at = after.taken_at
            delta = snapshots.diff(before, after)
        except requests.RequestException as e:
            unreachable = f"/metrics unreachable after: {e}"
            # The server may die between the last answer and this snapshot: name the death, not just the symptom.
            window.status = "failed"
            window.reason = (
                window.reason + "; " + unreachable if window.reason else self._with_exit(unreachable, grace=2.0)
            )
            return window, outcome
        except snapshots.ServerRestarted as e:
            window.status, window.reason = "invalid", str(e)
            return window, outcome
        # counters read from another server than the one measured are no figure: the method stops here
        self._verify_server(window, "invalid", f"when window {window.name} closed")
        window.counters = {"counters": delta.counters, "split": delta.split}
        finished = int(snapshots.finished(delta))
        if window.status == "failed" and outcome.requests_sent and finished < outcome.requests_sent:
            # Say why counters and answers cannot agree. (vLLM counts a request the client left as neither
            # finished nor aborted: the frontend drops it without a finish reason.)
            assert window.reason is not None  # a failed window says why
            window.reason += (
                f"; vLLM finished {finished} of the {outcome.requests_sent} requests sent in this "
                "window (a request a client or gateway gave up on leaves drafts in the counters "
                "and no answer), so no cross-check"
            )
        counted = accounting.from_delta(delta)
        window.from_counters = counted.to_dict() if counted else None
        checks: list[accounting.Check] = []
        if outcome.summed_requests and window.status == "ok":
            window.from_responses = outcome.reported.to_dict() if outcome.reported else None
            checks += accounting.crosscheck_requests(outcome.reported, counted)
            if outcome.by_category is not None:
                window.by_category = outcome.by_category.to_dict()
                checks += categories.crosscheck(outcome.by_category, counted)
        if outcome.bench is not None and window.status == "ok":
            checks += accounting.crosscheck_bench_answers(
                outcome.bench, finished, delta.get(m.GENERATION_TOKENS), outcome.output_len
            )
            checks += accounting.crosscheck_bench(outcome.bench, counted)
            checks += goodput.crosscheck(outcome.bench, outcome.slo)
        window.checks = [c.to_dict() for c in checks]
        return window, outcome


def _answered(outcome: Outcome) -> int | None:
    """The requests a window saw answered where it saw every one it sent answered, else None (its close then
    settles on two readings that agree): bench's completed with none failed, a request phase's sent."""
    if outcome.error:
        return None
    if outcome.bench is not None:
        completed, failed = outcome.bench.get("completed"), outcome.bench.get("failed")
        return completed if isinstance(completed, int) and completed > 0 and failed == 0 else None
    return outcome.requests_sent or None


def _cpu_snapshot() -> cpu_share.Table | None:
    try:
        return cpu_share.snapshot()
    except Exception:  # noqa: BLE001 - a process table that cannot be read costs the figure, never the window
        return None


def _load1() -> float | None:
    try:
        return os.getloadavg()[0]
    except OSError:  # not every platform has it
        return None
