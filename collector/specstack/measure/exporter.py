"""Run-window exporter: tells Prometheus (and so Grafana) when each measured window was open.

The collector opens a window for the warm-up, each acceptance phase and each bench task x concurrency, and
closes it when the phase ends. Prometheus scrapes this exporter as job `specstack`; the dashboards draw the
windows as annotations from `specstack_window_active` and list exact times from the start/end gauges.

    exp = WindowExporter(port=9477)          # None: no HTTP server, only the in-memory `windows` list
    exp.open("bench", run_id="r1", method="eagle3", task="code", concurrency=8)
    ...
    exp.close()
    exp.shutdown()                           # waits (bounded) for one scrape after the last change

Series (labels run_id, method, phase, task, concurrency; task and concurrency are "" when not applicable):
- `specstack_window_active` 1 while the window is open, 0 after it closed;
- `specstack_window_start_timestamp_seconds` Unix time the window opened;
- `specstack_window_end_timestamp_seconds` Unix time it closed (absent while open).
A window reopened with identical labels reuses its series (the latest start/end win); `windows` keeps all.
A window shorter than the scrape interval can open and close between two scrapes: Prometheus then never sees
its `active` = 1 (no annotation region on the dashboards), but stores its exact start and end times.

Prometheus must keep these labels as they are: the `specstack` scrape job must not attach target labels named
`method` or `run_id` (or it must set `honor_labels: true`), otherwise Prometheus renames ours to exported_*.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from prometheus_client import CollectorRegistry, Gauge, start_http_server

from specstack.config.metric_names import WINDOW_ACTIVE, WINDOW_END, WINDOW_LABELS, WINDOW_START

log = logging.getLogger(__name__)

# Loopback unless the deployment says otherwise (compose sets 0.0.0.0 so Prometheus can reach the collector).
DEFAULT_HOST = os.environ.get("SPECSTACK_WINDOWS_HOST", "127.0.0.1")


class _ScrapeCounter:
    """A collector with no samples, counting expositions of the registry (one per scrape)."""

    def __init__(self) -> None:
        self.count = 0

    def describe(self):  # no samples; keeps the registry from calling collect() at registration
        return []

    def collect(self):
        self.count += 1
        return []


class WindowExporter:
    """Marks measured windows as Prometheus series; with `port=None` only records them in `windows`.

    `port=0` picks a free port (see `.port`). The HTTP server uses its own registry, so nothing else of the
    collector process is exposed.
    """

    def __init__(self, port: int | None, host: str = DEFAULT_HOST) -> None:
        self.windows: list[dict[str, Any]] = []
        self.port: int | None = None
        self._lock = threading.Lock()
        self._current: dict[str, Any] | None = None
        self._labels: dict[str, str] | None = None
        self._server = None
        self._thread = None
        self._changed_at_scrape = 0  # scrape count when the state last changed
        if port is None:
            return
        self.registry = CollectorRegistry()
        self._scrapes = _ScrapeCounter()
        self.registry.register(self._scrapes)
        self._active = Gauge(
            WINDOW_ACTIVE,
            "1 while the measured window is open, 0 after it closed.",
            WINDOW_LABELS,
            registry=self.registry,
        )
        self._start = Gauge(
            WINDOW_START, "Unix time the measured window opened.", WINDOW_LABELS, registry=self.registry
        )
        self._end = Gauge(WINDOW_END, "Unix time the measured window closed.", WINDOW_LABELS, registry=self.registry)
        self._server, self._thread = start_http_server(port, addr=host, registry=self.registry)
        self.port = self._server.server_port
        log.info("window exporter serving on http://%s:%d/metrics", host, self.port)

    @property
    def serving(self) -> bool:
        return self._server is not None

    @property
    def current(self) -> dict[str, Any] | None:
        """The open window, or None."""
        return self._current

    def open(
        self,
        phase: str,
        *,
        run_id: str,
        method: str,
        task: str = "",
        concurrency: int | str = "",
        at: float | None = None,
    ) -> dict[str, Any]:
        """Open a window (closing the one still open, with a warning). Returns its record in `windows`.

        `at`: the Unix time the caller took as the window's start, so the series say the same instant as the
        caller's own record (default: now)."""
        if not phase:
            raise ValueError("a window needs a phase")
        with self._lock:
            if self._current is not None:
                log.warning(
                    "window %s opened while %s was still open; closing that one first", phase, self._current["phase"]
                )
                self._close_locked()
            now = time.time() if at is None else at
            record = {"phase": phase, "task": task, "concurrency": concurrency, "start": now, "end": None}
            self.windows.append(record)
            self._current = record
            if self.serving:
                labels = {
                    "run_id": str(run_id),
                    "method": str(method),
                    "phase": str(phase),
                    "task": "" if task is None else str(task),
                    "concurrency": "" if concurrency is None else str(concurrency),
                }
                self._labels = labels
                with contextlib.suppress(KeyError):  # a reopened label set: drop the old end time, it is open again
                    self._end.remove(*(labels[k] for k in WINDOW_LABELS))
                self._start.labels(**labels).set(now)
                self._active.labels(**labels).set(1)
                self._changed_at_scrape = self._scrapes.count
            return record

    def close(self, at: float | None = None) -> dict[str, Any] | None:
        """Close the open window (at the Unix time `at`, default now); returns its record, or None when no
        window was open."""
        with self._lock:
            return self._close_locked(at)

    def _close_locked(self, at: float | None = None) -> dict[str, Any] | None:
        record = self._current
        if record is None:
            return None
        now = time.time() if at is None else at
        record["end"] = now
        self._current = None
        if self.serving and self._labels is not None:
            self._end.labels(**self._labels).set(now)
            self._active.labels(**self._labels).set(0)
            self._changed_at_scrape = self._scrapes.count
            self._labels = None
        return record

    @contextmanager
    def window(self, phase: str, **labels) -> Iterator[dict[str, Any]]:
        """`with exporter.window("acceptance", run_id=..., method=..., task=...):` opens and closes a window."""
        record = self.open(phase, **labels)
        try:
            yield record
        finally:
            if self._current is record:
                self.close()

    def shutdown(self, max_wait: float = 15.0) -> None:
        """Close any open window and stop serving.

        If something has been scraping the exporter, first wait (at most `max_wait` s) for one scrape after
        the last change, so Prometheus stores the final 0 and end time of the last window. Idempotent.
        """
        self.close()
        if self._server is None:  # not serving
            return
        if self._scrapes.count > 0:
            deadline = time.monotonic() + max_wait
            while self._scrapes.count <= self._changed_at_scrape and time.monotonic() < deadline:
                time.sleep(0.05)
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = self._thread = None

    def __enter__(self) -> WindowExporter:
        return self

    def __exit__(self, *exc) -> None:
        self.shutdown()
