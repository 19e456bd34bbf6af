"""`make sweep PLATFORM=cpu CPUSETS=0,1 CALIBRATE=1` on the real engine: baseline and ngram served at the same
time, each server pinned to a core of its own, each its own Prometheus target, one run id, one bundle (mode
parallel); calibrated: the baseline also ran on the second core (baseline-slot1), never at the same time as its
run on the first (one compose service), and ngram is compared with the baseline of its own core."""

from __future__ import annotations

import json

import pytest

from . import engine
from .conftest import tail

pytestmark = pytest.mark.compose

RESULTS = ("baseline", "baseline-slot1", "ngram")


def _servers(run: dict) -> list[tuple[str, dict, tuple]]:
    """The servers' own containers (not the fetch / pre-flight / collector one-offs), as inspected at start, with
    their lifetime (start, die) from the engine's events, in start order."""
    events, out = run["events"], []
    for c in run["events"].started.values():
        svc = engine.service_of(c) or ""
        if svc.startswith("vllm-") and not engine.is_oneoff(c):
            start = min(e["timeNano"] for e in events.of("start", svc) if e["id"] == c["Id"])
            die = min((e["timeNano"] for e in events.of("die", svc) if e["id"] == c["Id"]), default=None)
            out.append((svc, c, (start, die)))
    return sorted(out, key=lambda x: x[2][0])


def test_parallel_sweep_makes_one_bundle_with_every_result_exact(parallel_run):
    out = parallel_run["make"]
    assert out.returncode == 0, tail(out.stdout)
    run_dir = parallel_run["run_dir"]
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["mode"] == "parallel" and manifest["slots"] == [{"cpuset": "0"}, {"cpuset": "1"}]
    assert manifest["calibration"] is True
    assert manifest["run_id"] == "cpu-parallel" and sorted(manifest["methods"]) == sorted(RESULTS)
    slots = {}
    for name in RESULTS:
        entry = manifest["methods"][name]
        s = json.loads((run_dir / name / "summary.json").read_text())
        assert entry["status"] == "ok" and s["status"] == "ok" and s["crosscheck"]["ok"], (name, s["error"])
        assert s["crosscheck"]["checks"] > 0 and s["run_id"] == "cpu-parallel" and s["method"] == name
        assert (
            s["provenance"]["host"]["slot"]
            == entry["slot"]
            == {"cpuset": entry["slot"]["asked"], "asked": entry["slot"]["asked"]}
        )
        slots[name] = entry["slot"]["cpuset"]
    assert (slots["baseline"], slots["baseline-slot1"]) == ("0", "1")
    # the calibration run is a run of the baseline (its server's own log), and ngram's baseline ran on its core
    s = json.loads((run_dir / "baseline-slot1" / "summary.json").read_text())
    assert (
        s["base_method"] == "baseline"
        and s["baseline_method"] is None
        and (run_dir / "baseline-slot1" / "server.log").exists()
    )
    ngram = json.loads((run_dir / "ngram" / "summary.json").read_text())
    assert ngram["baseline_method"] == ("baseline" if slots["ngram"] == "0" else "baseline-slot1")
    report = (run_dir / "report.md").read_text()
    assert "## Parallel run: where each method ran" in report
    assert (
        f"| ngram | cpuset {slots['ngram']} | {ngram['baseline_method']} | cpuset {slots['ngram']} | same |" in report
    )
    assert "### Calibration: the baseline on every slot" in report
    assert "| baseline | code | 1 | cpuset 0: " in report and "; cpuset 1: " in report


def test_the_servers_ran_at_once_each_on_its_own_core_and_port_and_one_service_never_twice(parallel_run):
    servers = _servers(parallel_run)
    assert sorted(svc for svc, _, _ in servers) == ["vllm-baseline", "vllm-baseline", "vllm-ngram"]
    manifest = json.loads((parallel_run["run_dir"] / "manifest.json").read_text())
    baselines = [x for x in servers if x[0] == "vllm-baseline"]
    ngram = next(x for x in servers if x[0] == "vllm-ngram")
    # the core the engine gave each server is the slot the bundle names
    for (_, c, _), name in zip(baselines, ("baseline", "baseline-slot1")):
        assert c["HostConfig"]["CpusetCpus"] == manifest["methods"][name]["slot"]["cpuset"]
    assert ngram[1]["HostConfig"]["CpusetCpus"] == manifest["methods"]["ngram"]["slot"]["cpuset"]
    (_, first, (a_start, a_die)), (_, second, (c_start, _)) = baselines
    n_start, n_die = ngram[2]
    assert a_die and n_die and a_start < n_die and n_start < a_die, servers  # baseline and ngram overlapped
    assert c_start > a_die, "the two runs of the baseline's service overlapped"
    ports = {c["HostConfig"]["PortBindings"]["8000/tcp"][0]["HostPort"] for _, c, _ in (baselines[0], ngram)}
    assert len(ports) == 2, ports


def test_each_server_was_its_own_prometheus_target(parallel_run):
    """One target file per result: Prometheus scraped every server of the run, each under its result's label."""
    assert sorted(r["metric"]["method"] for r in parallel_run["series"]) == sorted(RESULTS), parallel_run["series"]
    assert all(int(r["value"][1]) > 0 for r in parallel_run["series"])


def test_with_a_grafana_image_the_stack_starts_grafana_as_on_gpu(parallel_run, stack, grafana_lock):
    """This sweep's lock names a Grafana image (a stand-in that answers Grafana's health endpoint with what its
    container was given): make starts it, healthy, on loopback, locked down as compose.yaml says, with the
    provisioning and dashboards mounted and the generated admin password readable, and says where it is."""
    out = parallel_run["make"].stdout
    assert "Grafana: no image" not in out
    assert f"dashboards: http://127.0.0.1:{stack.ports['GRAFANA_PORT']}" in out, tail(out)
    (c,) = parallel_run["grafana"]
    assert c["Config"]["Image"] == grafana_lock["image"] and c["State"]["Health"]["Status"] == "healthy"
    assert {b["HostIp"] for b in c["HostConfig"]["PortBindings"]["3000/tcp"]} == {"127.0.0.1"}
    assert c["HostConfig"]["CapDrop"] == ["ALL"] and "no-new-privileges:true" in c["HostConfig"]["SecurityOpt"]
    assert not any("docker.sock" in m["Source"] for m in c["Mounts"])
    seen = parallel_run["grafana_health"]
    repo = stack.dir / "grafana"
    assert seen.get("standin") is True, seen
    assert seen["provisioning"] == sorted(
        str(p.relative_to(repo / "provisioning")) for p in (repo / "provisioning").rglob("*") if p.is_file()
    )
    assert seen["dashboards"] == sorted(p.name for p in (repo / "dashboards").glob("*.json"))
    assert seen["admin_password_readable"] and not seen["admin_password_is_default"] and seen["data_writable"]
    assert seen["settings"]["GF_AUTH_ANONYMOUS_ENABLED"] == "false"
    assert seen["settings"]["GF_USERS_ALLOW_SIGN_UP"] == "false"
    # The generated password is a secret: in no result file.
    password = (stack.dir / ".specstack" / "secrets" / "grafana_admin_password").read_text().strip()
    assert len(password) >= 24
    leaks = [p for p in stack.results.rglob("*") if p.is_file() and password in p.read_text(errors="replace")]
    assert leaks == []
