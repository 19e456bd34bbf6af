"""What can be known wrong about a method run before any server starts or any result folder exists (the
options, the run folder, the inputs, the port, the Python modules and models the method needs, vLLM's own parser
on the serve arguments): a user's mistake is refused in seconds, in one line, instead of a minute into loading."""

from __future__ import annotations

import importlib.util
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from specstack import events
from specstack.config.serving import Runtime
from specstack.errors import UserError
from specstack.measure import chat
from specstack.results.files import check_writable
from specstack.runs import prefix_cache
from specstack.runs.options import Options, load_tasks, plan_for
from specstack.server import model_checks, model_source, preflight, prompt_lengths
from specstack.server.runtime import (
    Server,
    cancel_held,
    native_address,
    port_free,
    port_in_use_message,
    prestart_native,
    probe,
    same_plan,
)

if TYPE_CHECKING:
    from specstack.config.methods import ServePlan


@dataclass
class Checked:
    """What check found right: the serve plan, and (native) its server's process, held while vLLM's pre-flight
    ran (runtime.prestart_native): the caller releases it (start_native) or cancels it (cancel_held)."""

    plan: ServePlan
    held: Server | None = None


def check(opts: Options, held: Server | None = None) -> Checked:
    """Everything that can be known wrong before a server starts; returns the serve plan (and a held server).
    held: a server a sweep started held for this method (runs/next_server.py), released instead of a new one where
    it is still this plan's; else cancelled, as on any refusal."""
    try:
        with events.step("checks"):
            opts.validate()
            check_writable(opts.results_dir)
            if (Path(opts.results_dir) / opts.run_id).is_dir():  # a run folder made read-only since it was started
                check_writable(Path(opts.results_dir) / opts.run_id)
            prefix_cache.check_same_setting(opts.run_id, Path(opts.results_dir) / opts.run_id, opts.prefix_caching)
            plan = plan_for(opts)
            if synthetic(plan) and not opts.allow_synthetic:
                raise UserError(
                    "rejection_sample_method=synthetic does not preserve the output distribution; pass "
                    "--allow-synthetic for a stress run (its results are marked not comparable)"
                )
            if held is not None and (opts.runtime != Runtime.NATIVE or not same_plan(held, plan)):
                cancel_held(held)
                held = None
            if opts.runtime == Runtime.NATIVE and held is None:
                # The checks below import what vLLM imports (the pre-flight: about 20 s on a lent H100,
                # docs/measured.md), as the server's own process does before its first log line: that process
                # starts now, held (server/held_serve.py: imports only, no port, GPU or model), so the two
                # overlap; it serves only once start_native releases it, after every check passed
                held = prestart_native(plan)
            check_inputs(opts, plan)  # every local input before any server is contacted or serves
            if opts.runtime != Runtime.NATIVE:
                assert opts.url is not None  # validate(): the url runtime needs --url
                probe(opts.url)  # a wrong --url is refused here, before any result folder
                return Checked(plan)
            problems = native_problems(opts, plan)
        # vLLM's own parser and config classes, in seconds, instead of a server dying after a minute of loading
        with events.step("preflight"):
            problems += preflight.run_checks(plan, deep="off").errors
        if problems:
            raise UserError("; ".join(problems))
    except BaseException:
        if held is not None:
            cancel_held(held)
        raise
    return Checked(plan, held)


def native_problems(opts: Options, plan: ServePlan) -> list[str]:
    """A server this run starts: its port, the modules and models it needs (a refusal raised at once; the model
    checks' problems returned, to be named with the pre-flight's)."""
    host, port = native_address(plan)
    if opts.port_wait <= 0 and not port_free(host, port):  # a sweep's next start waits for it instead
        raise UserError(port_in_use_message(host, port))
    missing = [mod for mod in plan.requires if not importable(mod)]
    if missing:
        raise UserError(
            f"method {plan.method!r} needs the Python module(s) {missing}; for suffix install "
            "arctic-inference==0.3.0 (make venv does)"
        )
    # a hub model that cannot be had (offline, not cached, hub unreachable) would fail a minute into loading
    unreachable = model_source.problems(plan)
    if unreachable:
        raise UserError("; ".join(unreachable))
    problems, _ = model_checks.check(plan)
    return problems


def check_inputs(opts: Options, plan: ServePlan) -> None:
    """The workload files and datasets parse (load_tasks into a scratch folder: the run's inputs/ is written
    only once the run starts), so a bad file is named even when the server is unreachable; and, for a server
    this run starts, every prompt fits its max model length with the output asked (an attached server's target
    and length are its own)."""
    with tempfile.TemporaryDirectory() as scratch:
        tasks = load_tasks(opts, Path(scratch))
        if opts.runtime == Runtime.NATIVE:
            too_long = prompt_lengths.problems(
                plan,
                tasks,
                perf_output_len=opts.perf_output_len,
                chat_kwargs=chat.CHAT_TEMPLATE_KWARGS,
                perf=not opts.skip_bench,
            )
            if too_long:
                raise UserError("; ".join(too_long))


def synthetic(plan: ServePlan) -> bool:
    """The plan's rejection sampler is vLLM's synthetic one: its output distribution is not the target's."""
    return (plan.speculative_config or {}).get("rejection_sample_method") == "synthetic"


def importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False
