"""A method's summary.json as typed records: `Summary` (the method's figures and verdict), `TaskFigures` (one
task's acceptance, answers and bench cells), `BenchCell` (one `vllm bench serve` repeat) and `Window` (one
measured window), each with `from_json` and `to_json`.

The records name every key that runs/ writes and report/, compare/ read; an attribute is what `.get(key)` on
the JSON gave (None where the key is absent). A key the record does not name is kept in `extra` as read, and
a named key that was absent is remembered in `absent`, and the order of the keys in `order`, so
`json.dumps(to_json(from_json(d))) == json.dumps(d)` for every summary on disk, whichever version wrote it. A
record built with its constructor writes every key it names, in the order it names them; one built with `make`
(how runs/ builds the summary) writes exactly the keys it was given, and a key it does not name is an error.
The schema version is the caller's business: results/reader.py migrates an older summary before parsing it
(`summary/3`).

Frozen: a record read is never changed in place; `but(key=value)` makes a changed copy (reader.py's merge of
server sessions), and `updated(key=value)` one whose new keys follow the old ones, as a dict's would (runs/ fills
the summary in that way while a method runs, and writes its JSON once). The nested JSON objects the records do not model (speculative config, the host's record,
a capacity search, ...) stay plain dicts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, ClassVar, TypeVar

from specstack.config.serving import on_gpu
from specstack.results import layout

JSON = dict[str, Any]

_R = TypeVar("_R", bound="_Record")
_META = ("extra", "absent", "order")


def _same(value: Any) -> Any:
    return value


@dataclass(frozen=True, kw_only=True)
class _Record:
    """Named keys as fields; `extra`: the other keys as read; `absent`: the named keys the JSON did not hold;
    `order`: the keys in the order read (written in that order, keys set later after them)."""

    extra: JSON = field(default_factory=dict)
    absent: frozenset[str] = frozenset()
    order: tuple[str, ...] = field(default=(), compare=False, repr=False)

    # key -> how a nested value is read and written (records, lists and maps of records)
    _decode: ClassVar[Mapping[str, Callable[[Any], Any]]] = {}
    _encode: ClassVar[Mapping[str, Callable[[Any], Any]]] = {}

    @classmethod
    def keys(cls) -> tuple[str, ...]:
        """The JSON keys this record names, in the order it writes them."""
        return tuple(f.name for f in fields(cls) if f.name not in _META)

    @classmethod
    def from_json(cls: type[_R], data: Mapping[str, Any]) -> _R:
        names = cls.keys()
        known = {n: cls._decode.get(n, _same)(data[n]) for n in names if n in data}
        return cls(
            **known,
            extra={k: v for k, v in data.items() if k not in names},
            absent=frozenset(n for n in names if n not in data),
            order=tuple(data),
        )

    @classmethod
    def make(cls: type[_R], extra: JSON | None = None, **values: Any) -> _R:
        """A record that writes exactly the keys of `values` (nested records as records), in their order, then
        `extra`'s: how runs/ builds the summary. A key the record does not name is an error, not an extra."""
        names = cls.keys()
        unnamed = [k for k in values if k not in names]
        if unnamed:
            raise TypeError(f"{cls.__name__} names no key {', '.join(unnamed)} (results/summary.py)")
        return cls(
            **values,
            extra=dict(extra or {}),
            absent=frozenset(n for n in names if n not in values),
            order=(*values, *(extra or {})),
        )

    def but(self: _R, **changes: Any) -> _R:
        """A copy with `changes` (the keys they name written, even where the JSON read had none)."""
        return replace(self, **changes, absent=self.absent - changes.keys())

    def updated(self: _R, extra: JSON | None = None, **changes: Any) -> _R:
        """A copy with `changes` (keys it names) and `extra` (keys it does not: merged into its `extra`), written as
        assigning them into its JSON would: a key it held keeps its place, a new one follows the keys it had, in
        the order given (how runs/ fills the summary in while the method runs; the file's order stays as it was)."""
        names = self.keys()
        unnamed = [k for k in changes if k not in names]
        if unnamed:
            raise TypeError(f"{type(self).__name__} names no key {', '.join(unnamed)} (results/summary.py)")
        named = [k for k in extra or {} if k in names]
        if named:
            raise TypeError(f"{type(self).__name__} names {', '.join(named)}: not an extra (results/summary.py)")
        return self._with(changes, extra or {}, (*changes, *(extra or {})))

    def merged(self: _R, data: Mapping[str, Any]) -> _R:
        """What `dict.update(data)` on its JSON writes: a key it names into its attribute (read as `from_json`
        reads it), any other into `extra`, the new ones after the old in `data`'s order (a server log's facts)."""
        names = self.keys()
        return self._with(
            {k: self._decode.get(k, _same)(v) for k, v in data.items() if k in names},
            {k: v for k, v in data.items() if k not in names},
            tuple(data),
        )

    def _with(self: _R, changes: Mapping[str, Any], extra: JSON, given: tuple[str, ...]) -> _R:
        had = self.written()
        return replace(
            self,
            **changes,
            extra={**self.extra, **extra},
            absent=self.absent - changes.keys(),
            order=(*had, *(k for k in given if k not in had)),
        )

    def written(self) -> tuple[str, ...]:
        """The keys `to_json` writes, in its order (without encoding a value)."""
        keys = [*(n for n in self.keys() if n not in self.absent), *self.extra]
        first = [k for k in self.order if k in keys]
        return (*first, *(k for k in keys if k not in first))

    def to_json(self) -> JSON:
        out = {n: self._encode.get(n, _same)(getattr(self, n)) for n in self.keys() if n not in self.absent}
        out.update(self.extra)
        if not self.order:
            return out
        return {**{k: out[k] for k in self.order if k in out}, **out}


def _cells(data: Any) -> list[BenchCell] | None:
    return [BenchCell.from_json(c) for c in data] if data is not None else data


def _phases(data: Any) -> dict[str, PhaseFigures] | None:
    return {k: PhaseFigures.from_json(v) for k, v in data.items()} if data is not None else data


def _tasks(data: Any) -> dict[str, TaskFigures] | None:
    return {k: TaskFigures.from_json(v) for k, v in data.items()} if data is not None else data


def _windows(data: Any) -> list[Window] | None:
    return [Window.from_json(w) for w in data] if data is not None else data


def _list_json(records: Any) -> Any:
    return [r.to_json() for r in records] if records is not None else None


def _map_json(records: Any) -> Any:
    return {k: r.to_json() for k, r in records.items()} if records is not None else None


@dataclass(frozen=True, kw_only=True)
class BenchCell(_Record):
    """One bench repeat at one load (runs/method_summary.py `_bench_cells`): where its result file is, bench's
    own figures (the `*_ms` latencies and `spec_decode_*` figures stay in `extra`, under bench's names) and what
    the summary derives from it. `session`: a merged server session's (reader.merge_sessions)."""

    concurrency: int | None = None
    request_rate: float | None = None
    load: str | None = None  # "concurrency" (closed loop; absent in older summaries), "rate", "probe"
    repeat: int | None = None
    session: int | None = None
    status: str | None = None
    file: str | None = None  # relative to the method folder (results/layout.bench_file)
    completed: int | None = None
    failed: int | None = None
    duration: float | None = None
    total_input_tokens: int | None = None
    total_output_tokens: int | None = None
    request_throughput: float | None = None
    output_throughput: float | None = None
    total_token_throughput: float | None = None
    max_requests_active_in_one_second: int | None = None
    acceptance_rate: float | None = None  # a fraction (bench writes percent)
    per_request: JSON | None = None  # stalls and burst reads (measure/per_request.py); None: bench kept none
    goodput: JSON | None = None  # --slo
    prefix_cache: JSON | None = None  # the cell window's hit rate (runs/prefix_cache.py)

    @property
    def closed_loop(self) -> bool:
        """A fixed concurrency (keyed by it); open-loop cells ("rate", "probe") are keyed by their rate."""
        return (self.load or "concurrency") == "concurrency"

    @property
    def load_text(self) -> str:
        """The cell's load in a few characters: "c=4", "0.5 req/s", "0.5 req/s probe"."""
        if self.closed_loop:
            return f"c={self.concurrency}"
        return f"{self.request_rate:g} req/s" + (" probe" if self.load == "probe" else "")

    @property
    def window(self) -> str | None:
        """The cell's window name, `bench/<cell>` (a merged session's file is `../<method>-s<i>/bench/<cell>.json`;
        None: a cell without its file)."""
        return layout.bench_window(layout.bench_cell(self.file)) if self.file else None

    def figure(self, name: str) -> Any:
        """One of bench's figures kept under bench's own name (`mean_tpot_ms`, `spec_decode_num_drafts`, ...)."""
        return self.extra.get(name)


@dataclass(frozen=True, kw_only=True)
class Acceptance(_Record):
    """A window's acceptance summed over its responses, and its answers (runs/method_summary.py `_acceptance`,
    `_answers`): the figures a task's greedy phase, a sampled phase, a turn and a category share."""

    acceptance_rate: float | None = None
    mean_acceptance_length: float | None = None
    histogram: list[int] | None = None
    per_position: list[float] | None = None  # vLLM's: share of all drafting steps
    per_position_conditional: list[float | None] | None = None  # / drafted >= p+1 (summary/3; absent: n/a)
    drafted_per_position: list[int] | None = None
    no_accept_share: float | None = None
    num_spec_steps: int | None = None
    num_draft_tokens: int | None = None
    num_accepted_draft_tokens: int | None = None
    requests: int | None = None
    completion_tokens: int | None = None
    finish_reasons: dict[str, int] | None = None
    categories: dict[str, PhaseFigures] | None = None  # category -> its requests' acceptance
    prefix_cache: JSON | None = None  # the window's hit rate (runs/prefix_cache.py)

    _decode: ClassVar[Mapping[str, Callable[[Any], Any]]] = {"categories": _phases}
    _encode: ClassVar[Mapping[str, Callable[[Any], Any]]] = {"categories": _map_json}

    @property
    def drafted(self) -> bool:
        """Something was drafted: the ratios mean something (None or 0 drafts: n/a, never 0 %)."""
        return bool(self.num_draft_tokens)

    @property
    def category_figures(self) -> dict[str, PhaseFigures]:
        return self.categories or {}


@dataclass(frozen=True, kw_only=True)
class PhaseFigures(Acceptance):
    """A sampled phase (--temperatures: `temperature`), turn 2 (--turns 2: `turn`, and the chats' file, sha256,
    `answers_from` and `left_out` from the run's turn-2 inputs) or one category of a window."""

    temperature: float | None = None
    turn: int | None = None
    status: str | None = None
    file: str | None = None
    sha256: str | None = None
    answers_from: str | None = None
    left_out: int | None = None


@dataclass(frozen=True, kw_only=True)
class TaskFigures(Acceptance):
    """One task's figures (runs/method_summary.py `finish`): the acceptance phase's acceptance summed over its
    responses, its answers, its split by category, its bench cells, its sampled phases and its turn 2."""

    bench: list[BenchCell] | None = None
    sampled: dict[str, PhaseFigures] | None = None  # temperature as text ("0.6") -> that phase
    turns: dict[str, PhaseFigures] | None = None  # {"2": turn 2} with --turns 2

    _decode: ClassVar[Mapping[str, Callable[[Any], Any]]] = {
        "bench": _cells,
        "categories": _phases,
        "sampled": _phases,
        "turns": _phases,
    }
    _encode: ClassVar[Mapping[str, Callable[[Any], Any]]] = {
        "bench": _list_json,
        "categories": _map_json,
        "sampled": _map_json,
        "turns": _map_json,
    }

    @property
    def cells(self) -> list[BenchCell]:
        """The bench cells ([] where the task has none)."""
        return self.bench or []

    @property
    def sampled_phases(self) -> list[PhaseFigures]:
        """The sampled phases, coolest first."""
        return sorted((self.sampled or {}).values(), key=lambda s: s.temperature or 0)

    @property
    def turn2(self) -> PhaseFigures | None:
        return (self.turns or {}).get("2")


@dataclass(frozen=True, kw_only=True)
class Window(_Record):
    """One measured window as measure/windows.py recorded it (`Window.to_dict`), with the prefix-cache figures
    runs/prefix_cache.py adds; `session`: a merged server session's."""

    name: str | None = None
    phase: str | None = None
    task: str | None = None
    concurrency: int | None = None
    repeat: int | None = None
    session: int | None = None
    request_rate: float | None = None
    load: str | None = None
    start: float | None = None
    end: float | None = None
    status: str | None = None
    reason: str | None = None
    counters: JSON | None = None
    counters_before: JSON | None = None
    counters_after: JSON | None = None
    settled_at: float | None = None
    from_counters: JSON | None = None
    from_responses: JSON | None = None
    by_category: JSON | None = None
    checks: list[JSON] | None = None
    host_load: JSON | None = None
    cpu: JSON | None = None  # measure/cpu_share.py `attribute` (absent in bundles before issue 41)
    checks_ok: bool | None = None
    prefix_cache: JSON | None = None


def given(record: _Record, name: str, default: Any) -> Any:
    """The attribute, or `default` where the JSON had no such key (what `.get(name, default)` gave)."""
    return default if name in record.absent else getattr(record, name)


@dataclass(frozen=True, kw_only=True)
class Server(_Record):
    """What is known about the server (runs/method_run.py `_server_facts`, then what its log and /metrics said):
    the rest (runtime, url, argv, env, pid, identity, the engine's startup phases, ...) stays in `extra`."""

    target: str | None = None  # the target model's path or hub id (None: an attached server's)
    root_model: str | None = None  # the tokenizer's folder, as /v1/models names it
    vllm_version: str | None = None
    kv_cache_tokens: int | None = None
    max_concurrency: float | None = None
    model_runner: str | None = None  # "V1" or "V2"
    async_scheduling: bool | None = None
    evidence: dict[str, JSON] | None = None  # fact -> its basis and the log line it rests on
    observed: JSON | None = None  # what the server's endpoints revealed (server/observed.py)

    def basis(self, fact: str) -> str | None:
        """What a fact of the server (model_runner, async_scheduling) rests on, where its evidence says."""
        return ((self.evidence or {}).get(fact) or {}).get("basis")

    @property
    def eager_smoke(self) -> bool:
        """Served in eager mode (no torch.compile, no CUDA graphs) on a GPU platform: the quick GPU smoke mode
        (platform gpu-native-eager), whose speed and start-up are not what compile mode, the GPU default, gives.
        The mode is the engine's own (server.startup, read from its log), else the serve arguments'."""
        if not on_gpu(str(self.extra.get("platform") or "")):
            return False  # on CPU eager is the platform's only mode here (services/methods.toml): nothing to mark
        mode = (self.extra.get("startup") or {}).get("mode")
        return mode == "eager" if mode else "--enforce-eager" in (self.extra.get("argv") or [])

    @property
    def dtype(self) -> str | None:
        """The dtype the server computed in, as its serve arguments gave it (`--dtype X` or `--dtype=X`); None where
        they do not say (an attached server's, or vLLM's default)."""
        argv = [str(a) for a in self.extra.get("argv") or []]
        for i, arg in enumerate(argv):
            if arg == "--dtype" and i + 1 < len(argv):
                return argv[i + 1]
            if arg.startswith("--dtype="):
                return arg.split("=", 1)[1]
        return None


@dataclass(frozen=True, kw_only=True)
class CrossCheck(_Record):
    """Whether every identity between the responses (or bench) and the counter deltas held (runs/method_summary.py
    `verdict`; a merge of server sessions holds only if every session's did)."""

    ok: bool | None = None
    checks: int | None = None
    mismatches: list[JSON] | None = None
    allowed: bool | None = None  # --allow-mismatch


@dataclass(frozen=True, kw_only=True)
class Replication(_Record):
    """The design the figures rest on (runs/options.py `replication`): "repeats" back to back in one server
    session, or "sessions" (--replicate sessions: this folder is session `session` of `sessions` of method `of`).
    A merge of the sessions (reader.merge_sessions) adds `sessions_ok` and `folders`, and sets `session` None."""

    design: str | None = None
    repeats: int | None = None
    session: int | None = None
    sessions: int | None = None
    of: str | None = None
    repeats_per_session: int | None = None
    sessions_ok: int | None = None
    folders: list[str] | None = None


@dataclass(frozen=True, kw_only=True)
class Provenance(_Record):
    """What exactly ran (runs/method_run.py `describe`): the flag list's hash and whose it is, the client's vLLM,
    what `make` recorded on the host (image digests, CPU and GPU facts) and the checkpoints the server read."""

    help_all: JSON | None = None
    vllm_client: str | None = None
    help_all_of: str | None = None
    host: JSON | None = None  # host/provenance.py's record (absent: a native run)
    models: JSON | None = None  # None: an attached server's are unknown

    @property
    def host_facts(self) -> JSON:
        return self.host or {}


@dataclass(frozen=True, kw_only=True)
class PrometheusView(_Record):
    """Whether Prometheus stored what the collector measured (runs/monitoring.py): "not collected" (no
    Prometheus given), "pending" (the run stopped before the check) or "checked", with a verdict per task."""

    status: str | None = None
    tasks: dict[str, JSON] | None = None  # task -> {"status": "ok" | ..., "reason": ...}

    @property
    def missing(self) -> dict[str, Any]:
        """task -> why Prometheus's view of it is not ok."""
        return {t: v.get("reason") for t, v in (self.tasks or {}).items() if v.get("status") != "ok"}


@dataclass(frozen=True, kw_only=True)
class SamplerProbe(_Record):
    """The engine sampler probe's verdict where the method ran (runs/sampler_probe.py `compact`): "pass", "fail",
    "not run" (with a reason) or "error"; the full report is the bundle's sampler-probe file."""

    verdict: str | None = None
    where: str | None = None
    reason: str | None = None
    error: str | None = None
    schema: str | None = None
    file: str | None = None
    platform: str | None = None
    failing_shapes: list[Any] | None = None
    cause: Any = None
    min_power: float | None = None
    family_alpha: float | None = None


@dataclass(frozen=True, kw_only=True)
class LoadTask(_Record):
    """One task's open-loop cells (runs/load.py): the rates offered and where they came from, and with
    --capacity the search's result (figures/capacity.py: kind, rate, bound, probes, ...)."""

    rates: list[float] | None = None
    rates_from: str | None = None
    capacity: JSON | None = None


def _load_tasks(data: Any) -> dict[str, LoadTask] | None:
    return {k: LoadTask.from_json(v) for k, v in data.items()} if data is not None else data


@dataclass(frozen=True, kw_only=True)
class Load(_Record):
    """--rates / --capacity (runs/load.py): the arrival shape and the cap on requests in flight, per task."""

    burstiness: float | None = None
    max_concurrency: int | None = None
    tasks: dict[str, LoadTask] | None = None

    _decode: ClassVar[Mapping[str, Callable[[Any], Any]]] = {"tasks": _load_tasks}
    _encode: ClassVar[Mapping[str, Callable[[Any], Any]]] = {"tasks": _map_json}

    @property
    def task_loads(self) -> dict[str, LoadTask]:
        return self.tasks or {}


def _nested(cls: type[_R]) -> Callable[[Any], _R | None]:
    return lambda data: cls.from_json(data) if data is not None else None


def _one_json(record: Any) -> Any:
    return record.to_json() if record is not None else None


@dataclass(frozen=True, kw_only=True)
class Summary(_Record):
    """A method's summary.json (runs/method_run.py `_new_summary`, then runs/method_summary.py `finish`)."""

    schema: str | None = None
    run_id: str | None = None
    method: str | None = None
    label: str | None = None
    base_method: str | None = None
    baseline_method: str | None = None
    status: str | None = None
    error: str | None = None
    error_type: str | None = None
    speculative_config: JSON | None = None
    speculative_config_source: str | None = None
    spec_override: JSON | None = None
    comparable: bool | None = None
    server: Server | None = None
    prefix_caching: JSON | None = None
    asked_for: JSON | None = None
    server_contradictions: JSON | None = None
    tasks: dict[str, TaskFigures] | None = None
    windows: list[Window] | None = None
    timings: JSON | None = None
    replication: Replication | None = None
    prometheus_view: PrometheusView | None = None
    crosscheck: CrossCheck | None = None
    provenance: Provenance | None = None
    sampler_probe: SamplerProbe | None = None
    turn2_inputs: JSON | None = None
    load: Load | None = None  # --rates / --capacity (runs/load.py)

    _decode: ClassVar[Mapping[str, Callable[[Any], Any]]] = {
        "tasks": _tasks,
        "windows": _windows,
        "server": _nested(Server),
        "crosscheck": _nested(CrossCheck),
        "replication": _nested(Replication),
        "provenance": _nested(Provenance),
        "prometheus_view": _nested(PrometheusView),
        "sampler_probe": _nested(SamplerProbe),
        "load": _nested(Load),
    }
    _encode: ClassVar[Mapping[str, Callable[[Any], Any]]] = {
        "tasks": _map_json,
        "windows": _list_json,
        "server": _one_json,
        "crosscheck": _one_json,
        "replication": _one_json,
        "provenance": _one_json,
        "prometheus_view": _one_json,
        "sampler_probe": _one_json,
        "load": _one_json,
    }

    @property
    def task_figures(self) -> dict[str, TaskFigures]:
        """The tasks' figures ({} where there are none)."""
        return self.tasks or {}

    @property
    def window_list(self) -> list[Window]:
        """The windows ([] where there are none)."""
        return self.windows or []

    @property
    def server_facts(self) -> Server:
        """The server's facts (every one None where none were recorded)."""
        return self.server or Server.from_json({})

    @property
    def load_figures(self) -> Load:
        """The open-loop cells' setting and per-task results (every one None where the run had none)."""
        return self.load or Load.from_json({})

    @property
    def provenance_facts(self) -> Provenance:
        return self.provenance or Provenance.from_json({})

    @classmethod
    def of(cls, summary: Summary | Mapping[str, Any]) -> Summary:
        """The record, from the record or from its JSON (a summary a test built by hand, a file read as it is)."""
        return summary if isinstance(summary, Summary) else cls.from_json(summary)
