"""The run's side of Prometheus, kept off the measured path.

One run-window exporter serves every method of a process (a sweep's windows keep their series, labelled by
method). Prometheus's view of a method's acceptance windows is checked after the method's results are
published, in a background thread: it must wait for the first scrape after each window (up to one scrape
interval), which used to be waited for inside the method run together with the first scrape after the server
was ready and the exporter's last scrape. The direct /metrics diff is the verdict; the view is a second opinion
that can come later. The check finishes before the next method measures anything (settle(), called once its
server is ready, usually long finished by then) and at close() (the end of a sweep or of `specstack run`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import requests

from specstack import events
from specstack.measure import prometheus_view
from specstack.measure.exporter import WindowExporter
from specstack.results.bundle import rewrite_summary
from specstack.results.summary import PrometheusView, Summary

PENDING = {"status": "pending", "tasks": {}}  # what a run stopped before its check leaves in summary.json


class Monitoring:
    def __init__(self, windows_port: int | None = None, prometheus_url: str | None = None, scrape_seconds: float = 5.0):
        self.windows_port, self.prometheus_url, self.scrape_seconds = windows_port, prometheus_url, scrape_seconds
        self._exporter: WindowExporter | None = None
        self._checks: list[threading.Thread] = []

    @classmethod
    def for_options(cls, opts) -> Monitoring:
        return cls(opts.windows_port, opts.prometheus_url, opts.prometheus_scrape_seconds)

    @property
    def exporter(self) -> WindowExporter | None:
        """The process's window exporter, started on first use; None when the run has no --windows-port."""
        if self._exporter is None and self.windows_port is not None:
            self._exporter = WindowExporter(self.windows_port)
        return self._exporter

    def await_first_sample(self, labels: dict) -> bool:
        """Before the first acceptance window: Prometheus has sampled this server's spec-decode counters at least
        once, so the window's view has a sample before it opened (without one its increase() cannot be exact and
        the view says "missing"). Usually already true (the server loaded and warmed up for seconds); otherwise
        bounded by three scrape intervals. False when Prometheus did not answer or sampled nothing: the run goes
        on and the view says why."""
        if not self.prometheus_url:
            return True
        deadline = time.monotonic() + 3 * self.scrape_seconds + 2
        while True:
            now = time.time()
            try:
                if prometheus_view.sample_times(
                    self.prometheus_url, now - 3 * self.scrape_seconds, now, labels, timeout=5
                ):
                    return True
            except (requests.RequestException, ValueError, KeyError):
                return False
            if time.monotonic() > deadline:
                return False
            time.sleep(min(0.5, self.scrape_seconds / 4))

    def check_view_later(
        self, summary: Summary, folder: Path, labels: dict, then: Callable[[Summary], None] = lambda checked: None
    ) -> None:
        """Check Prometheus's view of a published method's acceptance windows in the background, then write it
        into its summary.json in `folder` (which says PENDING until then), with the PNGs under `folder`/plots/,
        and hand the summary holding it to `then` (the run keeps what it returned up to date)."""
        url = self.prometheus_url
        if not url:
            return
        windows = [w.to_json() for w in summary.window_list]

        def check() -> None:
            with events.step("prometheus view", method=labels.get("method"), deferred=True):
                view = prometheus_view.bundle_view(url, windows, labels, folder / "plots", self.scrape_seconds)
                checked = summary.updated(prometheus_view=PrometheusView.from_json({"status": "checked", **view}))
                rewrite_summary(folder, checked)
                then(checked)

        thread = threading.Thread(target=check, name=f"prometheus-view-{labels.get('method')}", daemon=True)
        thread.start()
        self._checks.append(thread)

    def settle(self) -> None:
        """Finish every pending check (they must not run beside a measured window)."""
        while self._checks:
            self._checks.pop(0).join()

    def close(self) -> None:
        """Finish the checks, then stop the exporter once Prometheus has scraped the last window's end."""
        self.settle()
        if self._exporter is not None:
            with events.step("exporter final scrape"):
                self._exporter.shutdown(max_wait=3 * self.scrape_seconds)
            self._exporter = None

    def __enter__(self) -> Monitoring:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
