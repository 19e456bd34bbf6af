"""`make sweep PLATFORM=cpu CPUSETS=0,1` on the real engine: baseline and ngram served at the same time, each
server pinned to a core of its own, each its own Prometheus target, one run id, one bundle (mode parallel)."""
from __future__ import annotations

import json

import pytest

from . import engine
from .conftest import tail

pytestmark = pytest.mark.compose

METHODS = ("baseline", "ngram")


def _servers(run: dict) -> dict[str, dict]:
    """The servers' own containers (not the fetch / pre-flight / collector one-offs), as inspected at start."""
    return {engine.service_of(c): c for c in run["events"].started.values()
            if (engine.service_of(c) or "").startswith("vllm-") and not engine.is_oneoff(c)}


def test_parallel_sweep_makes_one_bundle_with_both_methods_exact(parallel_run):
    out = parallel_run["make"]
    assert out.returncode == 0, tail(out.stdout)
    run_dir = parallel_run["run_dir"]
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["mode"] == "parallel" and manifest["slots"] == [{"cpuset": "0"}, {"cpuset": "1"}]
    assert manifest["run_id"] == "cpu-parallel" and sorted(manifest["methods"]) == sorted(METHODS)
    cpusets = set()
    for m in METHODS:
        entry = manifest["methods"][m]
        s = json.loads((run_dir / m / "summary.json").read_text())
        assert entry["status"] == "ok" and s["status"] == "ok" and s["crosscheck"]["ok"], (m, s["error"])
        assert s["crosscheck"]["checks"] > 0 and s["run_id"] == "cpu-parallel"
        assert s["provenance"]["host"]["slot"] == entry["slot"] == {"cpuset": entry["slot"]["asked"],
                                                                     "asked": entry["slot"]["asked"]}
        cpusets.add(entry["slot"]["cpuset"])
    assert cpusets == {"0", "1"}
    report = (run_dir / "report.md").read_text()
    assert "## Parallel run: where each method ran" in report and "| ngram | cpuset " in report


def test_the_two_servers_ran_at_once_each_on_its_own_core_and_port(parallel_run):
    servers = _servers(parallel_run)
    assert sorted(servers) == [f"vllm-{m}" for m in METHODS]
    manifest = json.loads((parallel_run["run_dir"] / "manifest.json").read_text())
    for m in METHODS:   # the core the engine gave the server is the slot the bundle names
        assert servers[f"vllm-{m}"]["HostConfig"]["CpusetCpus"] == manifest["methods"][m]["slot"]["cpuset"]
    ports = {svc: c["HostConfig"]["PortBindings"]["8000/tcp"][0]["HostPort"] for svc, c in servers.items()}
    assert len(set(ports.values())) == 2, ports
    events = parallel_run["events"]
    spans = {svc: (min(e["timeNano"] for e in events.of("start", svc) if e["id"] == c["Id"]),
                   min((e["timeNano"] for e in events.of("die", svc) if e["id"] == c["Id"]), default=None))
             for svc, c in servers.items()}
    (a_start, a_die), (b_start, b_die) = spans["vllm-baseline"], spans["vllm-ngram"]
    assert a_die and b_die and a_start < b_die and b_start < a_die, spans   # the two lifetimes overlap


def test_each_server_was_its_own_prometheus_target(parallel_run):
    """One target file per method: Prometheus scraped both servers of the run, each under its method label."""
    assert sorted(r["metric"]["method"] for r in parallel_run["series"]) == sorted(METHODS), parallel_run["series"]
    assert all(int(r["value"][1]) > 0 for r in parallel_run["series"])
