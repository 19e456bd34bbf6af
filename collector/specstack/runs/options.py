"""What a method run is asked to do (Options), and what follows from it before anything starts: the serve plan
from services/methods.toml and the run's workloads. Every bad value fails here, with the option to fix."""
from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass, field, fields
from pathlib import Path

from specstack.config import methods
from specstack.config.serving import Platform, Runtime
from specstack.config.workloads import (
    DEFAULT_ACCEPTANCE_MAX_TOKENS,
    DEFAULT_NUM_PROMPTS,
    DEFAULT_PERF_OUTPUT_LEN,
    TASKS,
    Task,
    load_task,
    sha256,
    write_defaults,
)
from specstack.datasets.tasks import parse_spec, write_task
from specstack.errors import UserError
from specstack.results import layout
from specstack.results.files import atomic_write_bytes

REPLICATE = ("repeats", "sessions")
SESSION_ORDER = "ABBA"   # sessions: each round reverses the previous one (pipeline/sweep.py session_entries)
MAX_TEMPERATURE = 2.0
_PATHS = ("results_dir", "prometheus_targets")     # Options' Path fields (to_json / from_json)
_TUPLE_FIELDS = ("tasks", "datasets", "concurrencies", "rates", "temperatures")
TURNS = (1, 2)   # MT-Bench and Spec-Bench's multi-turn rows have two
MAX_PORT = 65535


@dataclass
class Options:
    method: str
    run_id: str
    results_dir: Path = Path("results")
    runtime: Runtime = Runtime.NATIVE
    url: str | None = None
    model_set: str = "default"
    platform: Platform = Platform.GPU_NATIVE
    models_dir: str | None = None
    port: int | None = None
    served_model_name: str = "spec-demo"
    tasks: tuple[str, ...] = TASKS
    workload_files: dict[str, tuple[Path, Path]] = field(default_factory=dict)  # task -> (perf, acceptance)
    datasets: tuple[str, ...] = ()  # --dataset NAME or NAME=FILE: each a task of that name (also in `tasks`)
    num_prompts: int = DEFAULT_NUM_PROMPTS
    perf_output_len: int = DEFAULT_PERF_OUTPUT_LEN
    acceptance_max_tokens: int = DEFAULT_ACCEPTANCE_MAX_TOKENS
    concurrencies: tuple[int, ...] = (1, 8)
    request_rate: float | None = None
    # open-loop cells (runs/load.py): arrivals at each rate (requests/s), no cap on in-flight requests; with
    # rates_auto the baseline derives them from its own capacity and the run's other methods reuse them
    rates: tuple[float, ...] = ()
    rates_auto: bool = False
    burstiness: float = 1.0         # 1: Poisson arrivals; < 1 burstier, > 1 more regular (Gamma, as bench's)
    rates_max_concurrency: int | None = None   # open loop: a cap on requests in flight (a gateway's); None: none
    # capacity at the SLO (figures/capacity.py): the highest rate whose share of requests meeting every --slo target
    # is at least capacity_share, bisected between the rate cells with at most capacity_probes more rates, until
    # the failing rate is within capacity_resolution (relative) of the passing one
    capacity_share: float | None = None
    capacity_probes: int = 3
    capacity_resolution: float = 0.25
    # per-request targets in ms (measure/goodput.py): each bench cell's goodput, checked against bench's own
    slo: dict[str, float] | None = None
    repeats: int = 1
    warmup_requests: int = 2
    acceptance_concurrency: int = 1
    # sampled acceptance phases after the greedy one: one window per task and temperature (per-request seeds)
    temperatures: tuple[float, ...] = ()
    samples_per_prompt: int = 1     # sampled phases: each prompt this many times (the losslessness test's samples)
    turns: int = 1                  # 2: a second greedy window per two-turn task, turn 1 answered by the baseline
    spec_override: dict | None = None
    prefix_caching: bool = False    # every method served with enable-prefix-caching (serve_args' override)
    allow_mismatch: bool = False
    # url runtime: measure a server whose observed facts contradict the method asked for (spec counters on a
    # baseline, none on a spec method, another K), recording the contradiction, instead of failing before measuring
    trust_server: bool = False
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
    baseline_result: str | None = None  # the result compared with, when not the method's baseline (calibration)
    port_release_timeout: float = 60.0  # sweep: how long the next server waits for the previous one's port
    port_wait: float = 0.0              # set by the sweep after a server of it stopped; 0: a busy port fails at once
    # How repeats are replicated: "repeats" (--repeats bench repeats back to back in one server session) or
    # "sessions" (sweep only: each repeat a server session of its own, methods interleaved with their baseline).
    replicate: str = "repeats"
    session: int | None = None          # sessions: which one this run is (1-based) ...
    sessions: int | None = None         # ... of how many
    slot: str | None = None             # a parallel sweep's slot (GPU or CPU set): the server target's `slot` label

    def __post_init__(self) -> None:
        # a caller's or a JSON spec's plain string becomes its member; an unknown name is refused here, in the
        # words a user fixes (to_json writes the members as their strings)
        self.runtime = Runtime.of(self.runtime)
        self.platform = Platform.of(self.platform)

    def to_json(self) -> dict:
        """Every field as JSON (a parallel sweep hands each slot's run its options so: pipeline/parallel.py)."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out.update({k: str(out[k]) for k in _PATHS if out[k] is not None})
        out.update({k: list(out[k]) for k in _TUPLE_FIELDS})
        out["workload_files"] = {t: [str(p), str(a)] for t, (p, a) in self.workload_files.items()}
        return out

    @classmethod
    def from_json(cls, data: dict) -> Options:
        """The Options to_json wrote (a key Options does not have is an error, not ignored)."""
        values = dict(data)
        values.update({k: Path(values[k]) for k in _PATHS if values.get(k) is not None})
        values.update({k: tuple(values[k]) for k in _TUPLE_FIELDS if k in values})
        values["workload_files"] = {t: (Path(p), Path(a)) for t, (p, a) in (values.get("workload_files") or {}).items()}
        return cls(**values)

    def replication(self) -> dict:
        """The design the run's figures rest on, recorded in its summary and the manifest."""
        if self.replicate == "sessions":
            return {"design": "sessions", "session": self.session, "sessions": self.sessions,
                    "of": self.method, "repeats_per_session": self.repeats}
        return {"design": "repeats", "repeats": self.repeats}

    def validate(self) -> None:
        if any(c <= 0 for c in self.concurrencies):
            raise UserError(f"concurrency must be > 0, got {list(self.concurrencies)}")
        for name in ("num_prompts", "perf_output_len", "acceptance_max_tokens", "repeats", "acceptance_concurrency",
                     "samples_per_prompt"):
            if getattr(self, name) <= 0:
                raise UserError(f"--{name.replace('_', '-')} must be > 0, got {getattr(self, name)}")
        if self.request_rate is not None and self.request_rate <= 0:
            raise UserError(f"--request-rate must be > 0 (omit it for an unlimited rate), got {self.request_rate}")
        self._validate_load()
        if self.bundle_name is not None and (not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]*", self.bundle_name)
                                             or self.bundle_name in layout.NOT_METHODS):
            raise UserError(f"--bundle-name {self.bundle_name!r}: a result folder is a plain name of letters, "
                            "digits, '-' and '_' (not inputs, host-provenance or report)")
        bad = [t for t in self.temperatures if not 0 < t <= MAX_TEMPERATURE]
        if bad:
            raise UserError(f"--temperatures must lie in (0, {MAX_TEMPERATURE:g}] (greedy, 0, always runs), got "
                            f"{', '.join(f'{t:g}' for t in bad)}")
        if len(set(self.temperatures)) != len(self.temperatures):
            raise UserError(f"--temperatures lists a value twice: {', '.join(f'{t:g}' for t in self.temperatures)}")
        if self.turns not in TURNS:
            raise UserError(f"--turns must be 1 or 2 (MT-Bench and Spec-Bench rows have at most two), got {self.turns}")
        if self.replicate not in REPLICATE:
            raise UserError(f"--replicate must be one of {', '.join(REPLICATE)}, got {self.replicate!r}")
        self._validate_ports_and_times()
        if self.runtime == Runtime.URL and not self.url:
            raise UserError("--runtime url needs --url http://host:port")
        if self.runtime == Runtime.NATIVE and self.url:
            raise UserError(f"--runtime native starts its own server, but --url {self.url} names one to attach to; "
                            "drop --runtime native to measure that server (--url alone means --runtime url), or "
                            "drop --url to start one")
        if self.url and not self.url.startswith(("http://", "https://")):
            raise UserError(f"--url must start with http:// or https://, got {self.url!r} (e.g. http://127.0.0.1:8000)")
        if self.trust_server and self.runtime != Runtime.URL:
            raise UserError("--trust-server is for --runtime url (a server someone else started); a native server "
                            "is started from the plan")
        names = [parse_spec(d).name for d in self.datasets]
        if len(set(names)) < len(names):
            raise UserError(f"--dataset names a set twice ({', '.join(self.datasets)}); give each once")
        for option, name in [*(("--dataset", n) for n in names), *(("--workload", n) for n in self.workload_files)]:
            if name not in self.tasks:   # the command line adds them (cli/options.py run_tasks); a caller may not
                raise UserError(f"{option} {name} is a task the run leaves out: add it to --tasks "
                                f"({','.join(self.tasks)},{name}) or drop --tasks")
        k = (self.spec_override or {}).get("num_speculative_tokens")
        if k is not None and (not isinstance(k, int) or k <= 0):
            raise UserError(f"num_speculative_tokens must be a positive integer, got {k!r}")

    def _validate_ports_and_times(self) -> None:
        """Ports a socket can have, and timeouts that can pass: `--port 0` would fall back to methods.toml's port,
        70000 fail in the middle of a bind, `--ready-timeout 0` give up on every server before it could start."""
        for name in ("port", "windows_port"):
            port = getattr(self, name)
            if port is not None and not 1 <= port <= MAX_PORT:
                raise UserError(f"--{name.replace('_', '-')} must be a TCP port from 1 to {MAX_PORT}, got {port}; "
                                "pass a free port (or leave the option out for the default)")
        for name in ("ready_timeout", "request_timeout"):
            seconds = getattr(self, name)
            if not 0 < seconds < float("inf"):
                raise UserError(f"--{name.replace('_', '-')} must be a positive, finite number of seconds, got "
                                f"{seconds:g}; leave it out for the default ({_DEFAULTS[name]:g} s)")
        for name in ("port_release_timeout", "quiet_gap"):   # 0: no wait, no gap
            seconds = getattr(self, name)
            if not 0 <= seconds < float("inf"):
                raise UserError(f"--{name.replace('_', '-')} must be >= 0 seconds (and finite), got {seconds:g}")

    def _validate_load(self) -> None:
        bad = [r for r in self.rates if not 0 < r < float("inf")]
        if bad:
            raise UserError(f"--rates must be positive, finite requests per second (e.g. --rates 0.5,1,2 or --rates "
                            f"auto), got {', '.join(f'{r:g}' for r in bad)}")
        if len(set(self.rates)) != len(self.rates):
            raise UserError(f"--rates lists a rate twice: {', '.join(f'{r:g}' for r in self.rates)}")
        if self.rates_auto and self.rates:
            raise UserError("--rates is either a list of rates or auto, not both")
        if not 0 < self.burstiness < float("inf"):
            raise UserError(f"--burstiness must be > 0 (1 = Poisson), got {self.burstiness:g}")
        if self.rates_max_concurrency is not None and (self.rates_max_concurrency <= 0 or not self.open_loop):
            raise UserError(f"--rates-max-concurrency caps the requests in flight of open-loop cells: it needs "
                            f"--rates and a value > 0, got {self.rates_max_concurrency}")
        if self.burstiness != 1.0 and not self.open_loop:
            raise UserError("--burstiness shapes the arrivals of open-loop cells; add --rates (e.g. --rates auto)")
        if self.capacity_share is None:
            return
        if not 0 < self.capacity_share <= 1:
            raise UserError(f"--capacity is the share of requests that must meet the SLO, in (0, 1], "
                            f"got {self.capacity_share:g}")
        if not self.slo or not self.open_loop:
            raise UserError("--capacity searches the highest rate meeting the SLO: it needs --slo (the targets) "
                            "and --rates (the rates it starts from)")
        if self.capacity_probes < 0 or not 0 < self.capacity_resolution < float("inf"):
            raise UserError(f"--capacity-probes must be >= 0 and --capacity-resolution > 0 (0.25: within 25 %), got "
                            f"{self.capacity_probes} and {self.capacity_resolution:g}")

    @property
    def open_loop(self) -> bool:
        return bool(self.rates) or self.rates_auto


_DEFAULTS = {f.name: f.default for f in fields(Options)}


def check_baseline_result(plan: dict, name: str) -> None:
    """--baseline-result NAME: a run of the method's own baseline under another folder name (<baseline> or
    <baseline>-slot<i>), never another method's result."""
    own = plan["baseline"]
    if own is None:
        raise UserError(f"--baseline-result: {plan['method']} is a baseline itself; it is compared with nothing")
    if name != own and not re.fullmatch(rf"{re.escape(own)}-slot\d+", name):
        raise UserError(f"--baseline-result {name}: {plan['method']} is compared with its baseline {own!r}; give "
                        f"{own} or a calibration run of it ({own}-slot<i>)")


def plan_for(opts: Options) -> dict:
    extra: dict[str, str | int] = {"served-model-name": opts.served_model_name}
    if opts.port:
        extra["port"] = opts.port
    plan = methods.build(opts.method, model_set_name=opts.model_set, platform=opts.platform,
                         models_dir=opts.models_dir, extra=extra, spec_override=opts.spec_override,
                         prefix_caching=True if opts.prefix_caching else None)   # None: methods.toml's [common]
    if opts.baseline_result:
        check_baseline_result(plan, opts.baseline_result)
        # what the summary names as its baseline; plan["baseline"] stays the method (turn-2 inputs and auto
        # rates are the baseline method's, shared by its runs on every slot)
        plan["baseline_result"] = opts.baseline_result
    max_len = int(plan["flags"].get("max-model-len", 0) or 0)
    if max_len and max(opts.perf_output_len, opts.acceptance_max_tokens) >= max_len:
        raise UserError(f"output length {max(opts.perf_output_len, opts.acceptance_max_tokens)} does not fit "
                        f"--max-model-len {max_len} with any prompt; lower --perf-output-len/--acceptance-max-tokens")
    return plan


def load_tasks(opts: Options, inputs_dir: Path) -> dict[str, Task]:
    """The run's workloads. User files are validated first; built-in tasks and datasets are written once per
    run into inputs/, and a later method of the same run must ask for exactly the same inputs (methods are
    compared on them)."""
    tasks = {name: load_task(name, perf, acc, default_max_tokens=opts.acceptance_max_tokens)
             for name, (perf, acc) in opts.workload_files.items()}
    datasets = [s for s in map(parse_spec, opts.datasets) if s.name not in opts.workload_files]
    defaults = tuple(t for t in opts.tasks if t not in opts.workload_files and t not in {s.name for s in datasets})
    if defaults or datasets:
        with tempfile.TemporaryDirectory() as tmp:
            if defaults:
                write_defaults(Path(tmp), num_prompts=opts.num_prompts, perf_output_len=opts.perf_output_len,
                               acceptance_max_tokens=opts.acceptance_max_tokens, tasks=defaults)
            for spec in datasets:
                write_task(Path(tmp), spec, num_prompts=opts.num_prompts, perf_output_len=opts.perf_output_len,
                           acceptance_max_tokens=opts.acceptance_max_tokens, turns=opts.turns)
            _keep_inputs(opts, Path(tmp), inputs_dir)
        for name in (*defaults, *(s.name for s in datasets)):
            tasks[name] = load_task(name, inputs_dir / layout.perf_input(name),
                                    inputs_dir / layout.acceptance_input(name),
                                    default_max_tokens=opts.acceptance_max_tokens)
    if opts.turns > 1 and not any(row.get("turn2") for t in tasks.values() for row in t.acceptance):
        raise UserError(f"--turns {opts.turns}: no task of the run has a second turn ({', '.join(opts.tasks)}); "
                        "add a two-turn set (--dataset mt-bench, --dataset spec-bench=FILE, or acceptance rows "
                        "with a \"turn2\" field) or drop --turns")
    return {t: tasks[t] for t in opts.tasks}


def _keep_inputs(opts: Options, fresh_dir: Path, inputs_dir: Path) -> None:
    """Copy the freshly written inputs into the run's inputs/, refusing any that differ from a kept one."""
    inputs_dir.mkdir(parents=True, exist_ok=True)
    for path in sorted(fresh_dir.iterdir()):
        kept = inputs_dir / path.name
        if kept.exists() and sha256(kept) != sha256(path):
            raise UserError(f"run {opts.run_id!r} was started with other inputs ({kept.name} differs: another "
                            "--num-prompts, output length or dataset file?); use a new --run-id")
        if not kept.exists():
            atomic_write_bytes(kept, path.read_bytes())
