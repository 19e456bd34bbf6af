"""Snapshots of a vLLM server's /metrics, and the difference between two of them.

A snapshot keeps the raw page (for the bundle) and the few families the accounting needs, summed
over `engine` (and any other label that does not split a measurement). Only the needed lines are
handed to prometheus_client's parser: parsing the whole page costs ~40x more.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import requests
from prometheus_client.parser import text_string_to_metric_families

from specstack.config import metric_names as m

PROCESS_START = "process_start_time_seconds"
_KEEP = frozenset(m.SNAPSHOT_FAMILIES) | {PROCESS_START}
# Labels whose values split one family into several measured quantities.
_SPLIT_BY = {m.SPEC_ACCEPTED_PER_POS: m.POSITION_LABEL, m.REQUEST_SUCCESS: "finished_reason"}


class ServerRestarted(RuntimeError):
    """A counter went down between two snapshots: the server restarted inside the window."""


def _family_of(line: str) -> str | None:
    if line.startswith("#"):
        parts = line.split(None, 3)
        name = parts[2] if len(parts) > 2 and parts[1] in ("HELP", "TYPE") else None
    else:
        end = min((i for i in (line.find("{"), line.find(" ")) if i >= 0), default=len(line))
        name = line[:end]
    return None if name is None else m.family(name)


def filter_exposition(text: str) -> str:
    """Keep only the lines of the families a snapshot uses."""
    return "\n".join(line for line in text.splitlines() if _family_of(line) in _KEEP) + "\n"


@dataclass
class Snapshot:
    taken_at: float
    raw: str = field(repr=False)
    counters: dict[str, float]  # family -> sum over engines
    split: dict[str, dict[str, float]]  # family -> {label value -> sum}, e.g. per position
    cache_config: dict[str, str]  # labels of vllm:cache_config_info (engine 0)
    process_start: float | None
    fetches: int = field(default=1, compare=False)  # /metrics reads it took to settle (harness benchmark)

    @property
    def has_spec(self) -> bool:
        return m.SPEC_NUM_DRAFTS in self.counters


def parse(text: str, taken_at: float | None = None) -> Snapshot:
    counters: dict[str, float] = {}
    split: dict[str, dict[str, float]] = {}
    cache_config: dict[str, str] = {}
    process_start = None
    for family in text_string_to_metric_families(filter_exposition(text)):
        for sample in family.samples:
            if sample.name.endswith("_created"):
                continue
            if family.name == PROCESS_START:
                process_start = sample.value
            elif family.name == m.CACHE_CONFIG_INFO:
                if not cache_config or sample.labels.get(m.ENGINE_LABEL) == "0":
                    cache_config = dict(sample.labels)
            elif family.name in _SPLIT_BY:
                key = sample.labels.get(_SPLIT_BY[family.name], "")
                bucket = split.setdefault(family.name, {})
                bucket[key] = bucket.get(key, 0.0) + sample.value
            else:
                counters[family.name] = counters.get(family.name, 0.0) + sample.value
    return Snapshot(time.time() if taken_at is None else taken_at, text, counters, split, cache_config, process_start)


def fetch(base_url: str, session: requests.Session | None = None, timeout: float = 10.0) -> Snapshot:
    http = session or requests
    response = http.get(f"{base_url}/metrics", timeout=timeout)
    response.raise_for_status()
    return parse(response.text, time.time())


def finished(counts: Snapshot | Delta) -> float:
    """The requests vLLM has counted finished, every finish reason: in a reading, or between two."""
    return sum(counts.split.get(m.REQUEST_SUCCESS, {}).values())


def settled(
    base_url: str,
    session: requests.Session | None = None,
    *,
    interval: float = 0.05,
    max_wait: float = 2.0,
    last: Snapshot | None = None,
    finishes: tuple[Snapshot, int] | None = None,
) -> Snapshot:
    """Fetch until two consecutive spec/engine readings agree (bounded): vLLM updates counters in its
    output loop, right around the time the last response is released.
    `last`: this server's previous settled reading (the window before's after-snapshot). A first reading that
    agrees with it is settled at once: one fetch, no wait, where nothing ran since (#42: every window edge of a
    sweep paid a second fetch and the interval).
    `finishes`: (the window's before-snapshot, the requests it saw answered, all it sent). A first reading that
    counts every one of them finished is settled at once too: vLLM 0.32.0 counts a finished request last among
    the stats of the step that ended it (PrometheusStatLogger.record: the spec-decode and token counters first),
    and serves /metrics on the event loop that records them, so that reading holds every count of the window's
    last step (#42: about 0.09 s at each window's close on a lent H100, two fetches and the interval)."""
    previous = fetch(base_url, session)
    if last is not None and _agree(previous, last):
        return previous
    if finishes is not None:
        before, answered = finishes
        if previous.process_start == before.process_start and finished(previous) - finished(before) == answered:
            return previous
    deadline = time.monotonic() + max_wait
    while time.monotonic() < deadline:
        time.sleep(interval)
        current = fetch(base_url, session)
        current.fetches = previous.fetches + 1
        if _agree(current, previous):
            return current
        previous = current
    return previous


def _agree(a: Snapshot, b: Snapshot) -> bool:
    return a.counters == b.counters and a.split == b.split and a.process_start == b.process_start


@dataclass
class Delta:
    counters: dict[str, float]
    split: dict[str, dict[str, float]]
    seconds: float

    def get(self, family: str) -> int:
        return int(round(self.counters.get(family, 0.0)))

    def per_position(self) -> list[int]:
        by_pos = self.split.get(m.SPEC_ACCEPTED_PER_POS, {})
        return [int(round(by_pos[p])) for p in sorted(by_pos, key=int)]


def diff(before: Snapshot, after: Snapshot) -> Delta:
    """after - before; raises ServerRestarted instead of ever returning a negative count."""
    if (
        before.process_start is not None
        and after.process_start is not None
        and after.process_start != before.process_start
    ):
        raise ServerRestarted("the vLLM server restarted between the two snapshots (process start time changed)")
    counters = {}
    for name in set(before.counters) | set(after.counters):
        d = after.counters.get(name, 0.0) - before.counters.get(name, 0.0)
        if d < 0:
            raise ServerRestarted(
                f"{name} went down ({before.counters.get(name)} -> {after.counters.get(name)}): "
                "the server restarted inside the window"
            )
        counters[name] = d
    split: dict[str, dict[str, float]] = {}
    for name in set(before.split) | set(after.split):
        b, a = before.split.get(name, {}), after.split.get(name, {})
        split[name] = {}
        for key in set(a) | set(b):
            d = a.get(key, 0.0) - b.get(key, 0.0)
            if d < 0:
                raise ServerRestarted(f"{name}{{{key}}} went down: the server restarted inside the window")
            split[name][key] = d
    return Delta(counters, split, after.taken_at - before.taken_at)
