"""Whether the server is the one asked for: its facts as the summary records them, and what its endpoints revealed
held against the method asked for (a server specstack started must agree with the plan; an attached one fails the
run unless --trust-server). Each check returns the summary with what it found; a ServerContradiction carries it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console

from specstack.config.serving import Runtime
from specstack.errors import UserError
from specstack.results.summary import JSON, Summary
from specstack.runs.options import Options
from specstack.server import observed
from specstack.server.runtime import Server as LiveServer

if TYPE_CHECKING:
    from specstack.config.methods import ServePlan

console = Console(stderr=True)


class ServerContradiction(UserError):
    """The server's observed facts contradict the method asked for; `summary` records what was found."""

    def __init__(self, message: str, summary: Summary):
        super().__init__(message)
        self.summary = summary


def server_facts(server: LiveServer, plan: ServePlan) -> dict:
    """What is known about the server: everything for a server specstack started (native); for one someone
    else started (url) only what its endpoints revealed, the rest listed as unknown (asked_for holds the plan)."""
    seen = observed.observe(server.base_url, server.served_model_name, server.models)
    facts = {
        "runtime": server.runtime,
        "url": server.base_url,
        "served_model_name": server.served_model_name,
        "root_model": server.root_model,
        "vllm_version": seen["vllm_version"],
        "ready_seconds": server.ready_seconds,
        "observed": seen,
    }
    if server.runtime == Runtime.NATIVE:
        assert server.process is not None  # native: the process this run started
        facts.update(
            target=plan.target,
            argv=server.argv or plan.argv,
            env=plan.env,
            platform=plan.platform,
            model_set=plan.model_set,
            pid=server.process.pid,
            identity=server.identity,
        )
    else:
        facts.update(target=None, argv=None, env=None, unknown=list(observed.UNKNOWN_ON_URL))
    return facts


def seen_by(summary: Summary) -> JSON:
    """What the server's endpoints revealed (start_server records it with the server's facts)."""
    seen = summary.server_facts.observed
    assert seen is not None, "start_server records what the server revealed"
    return seen


def check_observed(
    summary: Summary, server: LiveServer, plan: ServePlan, opts: Options, *, after_measuring: bool = False
) -> Summary:
    """url runtime: the speculative config the figures come from is the observed one; a server contradicting
    the method asked for fails the run before measuring (naming both facts and the fix) unless --trust-server.
    After measuring, the answers may reveal what /metrics did not (a page that could not be read)."""
    if server.runtime == Runtime.NATIVE:
        return summary if after_measuring else check_native_agrees(summary, server, plan, opts)
    seen, asked = seen_by(summary), plan.speculative_config
    has, k = observed.speculative(seen), observed.observed_k(seen)
    if has is None:
        summary = summary.updated(
            speculative_config=asked,
            speculative_config_source=(
                "asked for: the server revealed nothing about speculative decoding (/metrics unreadable, no answer "
                "metrics)"
            ),
        )
    else:
        summary = summary.updated(
            speculative_config=({"num_speculative_tokens": k} if k is not None else {}) if has else None,
            speculative_config_source="observed (/metrics, answers); the rest of the config is unknown",
        )
    found = observed.contradictions(plan.method, asked, seen, server.base_url, override=bool(opts.spec_override))
    if not found or (after_measuring and summary.server_contradictions):
        return summary
    summary = summary.updated(
        server_contradictions={
            "found": found,
            "trusted": opts.trust_server,
            "after_measuring": after_measuring,
        }
    )
    message = "; ".join(found) + ". Fix: " + observed.fix_for(plan.method, asked, seen)
    if opts.trust_server:
        console.print(f"[bold yellow]warning[/]: --trust-server: measuring anyway: {'; '.join(found)}")
        return summary
    if after_measuring:
        if summary.error is None:
            summary = summary.updated(error=message, error_type="ServerContradiction")
        return summary
    raise ServerContradiction(message, summary)


def check_native_agrees(summary: Summary, server: LiveServer, plan: ServePlan, opts: Options) -> Summary:
    """A server this run started must reveal what the plan asked for (spec-decode counters and K, or none;
    the served name; max-model-len): anything else means the answers come from another server or another
    config, and no figure of it may be read as this method's. No --trust-server here."""
    found = observed.plan_contradictions(plan, seen_by(summary), server.base_url, override=bool(opts.spec_override))
    if not found:
        return summary
    summary = summary.updated(server_contradictions={"found": found, "trusted": False, "after_measuring": False})
    raise ServerContradiction(
        "; ".join(found) + f". Nothing was measured. Fix: check {server.log_path} "
        "for the config the server started with, and that nothing else serves on "
        "its port",
        summary,
    )
