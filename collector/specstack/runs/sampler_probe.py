"""The engine sampler probe's verdict in every run with sampled phases (`--temperatures`): is a difference the
lossless test flags the method's, or the engine's own sampler's on this platform (docs/sampler-probe.md)?

Natively the server is this venv's vLLM on this machine, so the probe (in-process, no model, seconds) answers
for exactly the sampler the server ran; it runs once per process (a sweep's methods share it), after the
server stopped, so it measures nothing of the server's time. An attached server (`--runtime url`, the compose
stack) may run another vLLM on another device: the summary says the probe was not run and how to run it there;
so does a server that ran Model Runner V2, whose sampler is another module than the one the probe drives.
The run never fails for the probe: its verdict is a label on the figures, not a check of the run.
"""

from __future__ import annotations

from specstack.config.serving import Runtime
from specstack.results.bundle import MethodBundle
from specstack.results.layout import SAMPLER_PROBE_FILE
from specstack.results.summary import SamplerProbe, Summary

_cached: dict | None = None  # one probe per process: the installed vLLM does not change within it


def _probe() -> dict:
    global _cached
    if _cached is None:
        from specstack.probes.sampler import run_probe

        try:
            _cached = run_probe()
        except Exception as e:  # vLLM or torch not importable here, a probe bug: say so, keep the run
            _cached = {"verdict": "error", "error": f"{type(e).__name__}: {e}"}
    return _cached


def compact(report: dict, where: str) -> SamplerProbe:
    """What the summary keeps (the report's label reads it); the full report is SAMPLER_PROBE_FILE."""
    if report.get("verdict") == "error":
        return SamplerProbe.make(verdict="error", where=where, error=report["error"])
    return SamplerProbe.make(
        verdict=report["verdict"],
        where=where,
        schema=report["schema"],
        file=SAMPLER_PROBE_FILE,
        platform=report["platform"],
        failing_shapes=report["failing_shapes"],
        cause=report["cause"],
        min_power=report["statistics"]["min_power"],
        family_alpha=report["statistics"]["family_alpha"],
    )


def record(summary: Summary, bundle: MethodBundle, *, temperatures, runtime: str, speculative: bool) -> Summary:
    """The summary with its sampler_probe for a speculative method with sampled phases; as it was for any other run."""
    if not temperatures or not speculative:
        return summary
    if runtime != Runtime.NATIVE:
        return summary.updated(
            sampler_probe=SamplerProbe.make(
                verdict="not run",
                where=runtime,
                reason="the attached server may run another vLLM on another device than this process; run "
                "`python3 -m specstack.cli.probe_sampler` where the server runs (in its image) to know",
            )
        )
    if summary.server_facts.model_runner == "V2":
        return summary.updated(
            sampler_probe=SamplerProbe.make(
                verdict="not run",
                where=runtime,
                reason="the server ran Model Runner V2, whose rejection sampler (vllm/v1/worker/gpu/spec_decode/"
                "rejection_sampler.py) the probe does not drive: it checks V1's (docs/sampler-probe.md)",
            )
        )
    report = _probe()
    where = "native: the installed vLLM the server ran, on this machine"
    if report.get("verdict") != "error":
        bundle.write_json(SAMPLER_PROBE_FILE, report)
    return summary.updated(sampler_probe=compact(report, where))
