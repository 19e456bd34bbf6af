"""The serial loop of a sweep: its methods strictly one after another, one server at a time. The one loop of both
front doors: `specstack sweep`, `sweep-k` and `reproduce` (pipeline/sweep.py `run_all`, each step `run_method`)
and `make sweep` / the compose path of `make reproduce` (`one_by_one` below, from host/lifecycle.py, each step
`one_method`, a compose method flow under its heading). What a step is, which results count as finished and what ends the loop early are the caller's:

- natively, a finished result of the run is kept and not run again (unless --force), and a server's port that
  was not released stops the sweep (every later method would meet it) by raising;
- on compose nothing is skipped, and on a GPU a server whose memory is not released stops the sweep, the rest
  not run.

Standard library only and Python 3.8-safe: host/ runs it under the host's plain `python3` (make, before any venv
exists; tests/host/test_cli.py checks the import graph and the syntax).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Generic, Sequence, TypeVar

T = TypeVar("T")  # one item of the sweep: (result folder, options) natively; (method, heading, measure) on compose
R = TypeVar("R")  # what an item gave: its summary natively; the exit status of its method flow on compose


@dataclass
class Serial(Generic[R]):
    """What the loop did: every item's result in order (run, or kept as finished), and whether it stopped early."""

    results: list[R] = field(default_factory=list)
    stopped: bool = False


def serially(
    items: Sequence[T],
    step: Callable[[int, T], R],
    *,
    finished: Callable[[T], R | None] | None = None,
    stop: Callable[[T, R, Sequence[T]], bool] | None = None,
) -> Serial[R]:
    """Each item in order, strictly one after another. `finished(item)`, when given, is asked just before the item
    would run: a result it gives is kept and the item is not run. Otherwise `step(index, item)` runs it (index
    counts from 0 over every item, kept or run). After each item run, `stop(item, its result, the items after
    it)` may end the loop: True stops it there (the rest not run, `stopped`), or it raises."""
    out: Serial[R] = Serial()
    for i, item in enumerate(items):
        done = finished(item) if finished is not None else None
        if done is not None:
            out.results.append(done)
            continue
        result = step(i, item)
        out.results.append(result)
        if stop is not None and stop(item, result, items[i + 1 :]):
            out.stopped = True
            break
    return out


def one_by_one(
    steps: Sequence[tuple[str, str, Callable[[], int]]],
    *,
    say: Callable[[str], object],
    stop: Callable[[str], bool] | None = None,
) -> str:
    """make's serial flows on this loop (make sweep, the compose path of make reproduce): each (method, heading,
    measure) in turn, its heading said first, a non-zero measure (the method flow's exit status) a failure;
    `stop(method)`, asked after each, True ends the loop there (host/lifecycle.py: a GPU whose memory was not
    released). The failures, as " m1 m2", with " (stopped)" after them when the loop was stopped."""

    def step(_: int, item: tuple[str, str, Callable[[], int]]) -> int:
        say(item[1])
        return item[2]()

    def stopped(item: tuple[str, str, Callable[[], int]], rc: int, rest: object) -> bool:
        return stop is not None and stop(item[0])

    ran = serially(steps, step, stop=stopped)
    failed = "".join(f" {m}" for (m, _, _), rc in zip(steps, ran.results) if rc)
    return failed + (" (stopped)" if ran.stopped else "")
