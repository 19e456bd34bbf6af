"""Live progress of a run on a terminal (rich): which method of how many, the elapsed time while a server
loads, requests answered / sent in each window, and an estimate of the time left from the methods that
have run. Off when the output is not a terminal: CI logs keep only the run's own few lines per method."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TextColumn, TimeElapsedColumn
from rich.text import Text

from specstack import events
from specstack.config.serving import Runtime


def minutes(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    return f"{seconds // 60} min {seconds % 60:02d} s" if seconds >= 60 else f"{seconds} s"


class Estimate:
    """Time left in a sweep: each method still to run is assumed to take the mean of those that ran; the
    running one is credited with what it has used so far. Unknown until one method has finished."""

    def __init__(self) -> None:
        self.durations: list[float] = []
        self.remaining_after_current = 0
        self.current_started: float | None = None

    def seconds_left(self, now: float) -> float | None:
        if not self.durations:
            return None
        mean = sum(self.durations) / len(self.durations)
        current = 0.0
        if self.current_started is not None:
            current = max(0.0, mean - (now - self.current_started))
        return current + mean * self.remaining_after_current


class _LeftColumn(ProgressColumn):
    """Renders the sweep's estimate on every refresh, so it counts down between events."""

    def __init__(self, estimate: Estimate):
        super().__init__()
        self.estimate = estimate

    def render(self, task) -> Text:
        if not task.fields.get("sweep"):
            return Text("")
        left = self.estimate.seconds_left(time.monotonic())
        return Text("time left: estimating" if left is None else f"~{minutes(left)} left", style="cyan")


class LiveProgress:
    """An events listener that drives two rows: the sweep (methods done of total, time left) and the current
    step (server loading with its elapsed time, or a window's requests done / total)."""

    def __init__(self, console: Console):
        self.estimate = Estimate()
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(bar_width=30),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            _LeftColumn(self.estimate),
            console=console,
            refresh_per_second=4,
        )
        self.sweep = self.progress.add_task("run", total=1, sweep=True)
        self.step = self.progress.add_task("", total=None, sweep=False, visible=False)
        self.method = ""

    def __call__(self, event: str, f: dict) -> None:
        handler = getattr(self, "_" + event.replace(".", "_"), None)
        if handler is not None:
            handler(f)

    def _sweep_start(self, f: dict) -> None:
        self.progress.update(self.sweep, total=len(f["methods"]), completed=0)

    def _method_start(self, f: dict) -> None:
        self.method = f["method"]
        est = self.estimate
        est.current_started = f["at"]
        est.remaining_after_current = max(0, f["total"] - f["index"])
        if self.progress.tasks[self.sweep].total != f["total"]:
            self.progress.update(self.sweep, total=f["total"])  # a lone `specstack run`
        self.progress.update(self.sweep, description=f"method {f['index']}/{f['total']}: {f['method']}")

    def _method_skip(self, f: dict) -> None:
        self.progress.advance(self.sweep)

    def _server_start(self, f: dict) -> None:
        what = "loading server" if f["runtime"] == Runtime.NATIVE else "waiting for the server"
        self._restart_step(f"{f['method']}: {what}", total=None)

    def _server_ready(self, f: dict) -> None:
        self.progress.update(self.step, description=f"{f['method']}: server ready in {minutes(f['seconds'])}")

    def _window_start(self, f: dict) -> None:
        self._restart_step(f"{self.method}: {f['name']}", total=f.get("total"))

    def _window_progress(self, f: dict) -> None:
        self.progress.update(self.step, completed=f["done"], total=f.get("total"))

    def _method_end(self, f: dict) -> None:
        est = self.estimate
        est.durations.append(f["seconds"])
        est.current_started = None
        self.progress.advance(self.sweep)
        self.progress.update(self.step, visible=False)

    def _restart_step(self, description: str, total: int | None) -> None:
        self.progress.reset(self.step, description=description, total=total, completed=0, visible=True)


@contextlib.contextmanager
def live(console: Console, enabled: bool | None = None) -> Iterator[LiveProgress | None]:
    """The live display for the block, if `console` is a terminal (or `enabled` says so)."""
    if not (console.is_terminal if enabled is None else enabled):
        yield None
        return
    display = LiveProgress(console)
    with display.progress, events.listening(display):
        yield display
