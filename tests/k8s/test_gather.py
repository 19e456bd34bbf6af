"""`specstack k8s gather RUN` against a stand-in kubectl (tests/k8s/kubectl_standin.py) that serves pods rendered
from the chart itself (their labels and containers are the real template's) holding one run tree per Job, written
by tests/bundles.py in the layout the Job's collector writes (`--results /results/jobs/<method>`). Then the
real `specstack report` reads the gathered bundle."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from specstack.cli.main import main
from specstack.results.reader import load_run
from tests.bundles import TEXTS, figures, manifest, write_method
from tests.k8s.conftest import NAMESPACE, RUN_ID, of_kind, render
from tests.k8s.tools import tools
from tests.support import free_port

pytestmark = pytest.mark.config

STANDIN = Path(__file__).resolve().parent / "kubectl_standin.py"
CELLS = {(t, c): [(10.0, 100.0, {})] for t in ("code", "chat") for c in (1, 4)}
SPEC_CELLS = {(t, c): [(5.0, 190.0, {"acc_len": 2.5})] for t in ("code", "chat") for c in (1, 4)}


def _pod(job: dict, phase: str, node: str) -> dict:
    template = job["spec"]["template"]
    name = f"{job['metadata']['name']}-x7k2p"
    images = {c["name"]: c["image"] for c in template["spec"]["initContainers"] + template["spec"]["containers"]}
    return {
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "creationTimestamp": "2026-12-01T07:00:00Z",
            "labels": {**template["metadata"]["labels"], "job-name": job["metadata"]["name"]},
        },
        "spec": {**template["spec"], "nodeName": node},
        "status": {
            "phase": phase,
            "startTime": "2026-12-01T07:00:01Z",
            "initContainerStatuses": [
                {
                    "name": "vllm",
                    "imageID": f"docker.io/{images['vllm']}@sha256:" + "a" * 64,
                    "restartCount": 0,
                    "state": {"running": {}},
                }
            ],
            "containerStatuses": [
                {
                    "name": "collector",
                    "imageID": "registry.local/collector@sha256:" + "b" * 64,
                    "restartCount": 0,
                    "state": {"running": {}},
                }
            ],
        },
    }


def _job_tree(root: Path, method: str, node: str) -> None:
    """What one Job's collector leaves under /results/jobs/<method>/<run-id>/."""
    tree = root / "results" / "jobs" / method / RUN_ID
    if method == "baseline":
        write_method(tree, method, baseline=None, k=None, cells=CELLS, texts=TEXTS)
    else:
        fig = figures([2, 1, 1, 0, 4])
        write_method(
            tree, method, baseline="baseline", cells=SPEC_CELLS, texts=TEXTS, acceptance={"code": fig, "chat": fig}
        )
    manifest(
        tree,
        {method: {"status": "ok", "dir": method, "error": None}},
        repeats=1,
        platform="gpu-container",
        host={"machine": "x86_64", "node": node},
        inputs={"inputs/code.perf.jsonl": "c" * 64},
    )
    (tree / "inputs").mkdir()
    (tree / "inputs" / "code.perf.jsonl").write_text('{"prompt": "p"}\n')
    (tree / "host-provenance").mkdir()
    (tree / "host-provenance" / f"{method}.server.log").write_text(f"INFO vllm serve {method}\n")


@pytest.fixture
def cluster(tmp_path, monkeypatch):
    """A namespace with the Job pods of baseline and ngram (and whatever a test adds), and KUBECTL set to the
    stand-in. Returns (root, pods, write) where write() saves pods.json after a test changed it."""
    root = tmp_path / "cluster"
    pods = []
    jobs = {
        j["metadata"]["labels"]["specstack.io/method"]: j
        for j in of_kind(render({"methods": ["baseline", "ngram"]}), "Job")
    }
    for i, (method, job) in enumerate(sorted(jobs.items())):
        pod = _pod(job, "Running", f"gpu-node-{i}")
        pods.append(pod)
        _job_tree(root / "fs" / pod["metadata"]["name"] / "collector", method, f"gpu-node-{i}")
        for container, text in (("vllm", f"vllm log of {method}\n"), ("collector", f"collector log of {method}\n")):
            log = root / "logs" / pod["metadata"]["name"] / f"{container}.log"
            log.parent.mkdir(parents=True, exist_ok=True)
            log.write_text(text)

    def write() -> None:
        (root / "pods.json").write_text(json.dumps({"items": pods}))

    write()
    wrapper = tmp_path / "kubectl"
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} {STANDIN} "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("KUBECTL", str(wrapper))
    monkeypatch.setenv("KUBECTL_STANDIN_ROOT", str(root))
    return root, pods, write


def _calls(root: Path) -> list[list[str]]:
    return [json.loads(line) for line in (root / "calls.log").read_text().splitlines()]


def _gather(capsys, results: Path, *extra: str) -> tuple[int, dict, str]:
    code = main(["k8s", "gather", RUN_ID, "--namespace", NAMESPACE, "--results", str(results), *extra])
    out, err = capsys.readouterr()
    return code, json.loads(out.strip().splitlines()[-1]), err


def test_gather_builds_one_bundle_the_report_reads(cluster, tmp_path, capsys):
    root, pods, _ = cluster
    code, out, _ = _gather(capsys, tmp_path / "results")
    assert code == 0 and out["copied"] == ["baseline", "ngram"] and out["missing"] == []
    run = tmp_path / "results" / RUN_ID
    data = load_run(run)
    assert list(data.methods) == ["baseline", "ngram"] and not data.failed and not data.warnings
    m = json.loads((run / "manifest.json").read_text())
    assert m["methods"] == {k: {"status": "ok", "dir": k, "error": None} for k in ("baseline", "ngram")}
    assert m["run_id"] == RUN_ID and m["platform"] == "gpu-container"
    assert {k: v["node"] for k, v in m["k8s"]["jobs"].items()} == {"baseline": "gpu-node-0", "ngram": "gpu-node-1"}
    assert m["k8s"]["jobs"]["ngram"]["images"]["collector"] == "registry.local/collector@sha256:" + "b" * 64
    prov = run / "host-provenance"
    assert (prov / "ngram.vllm.log").read_text() == "vllm log of ngram\n"
    assert (prov / "ngram.server.log").read_text() == "INFO vllm serve ngram\n"
    pod_record = json.loads((prov / "baseline.pod.json").read_text())
    assert [c["name"] for c in pod_record["containers"]] == ["vllm", "collector"]
    assert "env" not in json.dumps(pod_record["containers"])
    # the held collectors were released only after their trees were copied
    for pod in pods:
        name, method = pod["metadata"]["name"], pod["metadata"]["labels"]["specstack.io/method"]
        assert (root / "fs" / name / "collector" / "results/jobs" / method / RUN_ID / ".gathered").exists()
    verbs = [c[2] for c in _calls(root)]
    assert verbs.index("exec") > verbs.index("cp")
    # gathered again (say the first gather was interrupted before releasing): nothing copied, both released
    markers = list(root.glob("fs/*/collector/results/jobs/*/*/.gathered"))
    for marker in markers:
        marker.unlink()
    code, out, _ = _gather(capsys, tmp_path / "results")
    assert code == 0 and out["copied"] == [] and out["already_there"] == ["baseline", "ngram"]
    assert len(markers) == 2 and all(m.exists() for m in markers)
    assert main(["report", str(run)]) == 0
    report = (run / "report.md").read_text()
    assert "ngram" in report and "baseline" in report


def test_a_claim_is_read_through_the_access_pod_and_gather_can_run_again(cluster, tmp_path, capsys):
    root, pods, write = cluster
    (access,) = of_kind(render({"results": {"existingClaim": "specstack-results", "holdSeconds": 0}}), "Pod")
    access = {**access, "metadata": {**access["metadata"], "namespace": NAMESPACE}, "status": {"phase": "Running"}}
    claim = root / "fs" / access["metadata"]["name"] / "results" / "results" / "jobs"
    claim.mkdir(parents=True)
    for pod in pods:  # the Jobs have ended; their trees live on the claim, seen by the access pod
        pod["status"]["phase"] = "Succeeded"
        for tree in (root / "fs" / pod["metadata"]["name"] / "collector" / "results" / "jobs").iterdir():
            os.rename(tree, claim / tree.name)
    pods.append(access)
    write()
    code, out, _ = _gather(capsys, tmp_path / "results")
    assert code == 0 and out["copied"] == ["baseline", "ngram"]
    assert {c[5].split(":")[0] for c in _calls(root) if c[2] == "cp"} == {access["metadata"]["name"]}
    assert "exec" not in {c[2] for c in _calls(root)}
    code, out, _ = _gather(capsys, tmp_path / "results")
    assert code == 0 and out["copied"] == [] and out["already_there"] == ["baseline", "ngram"]


def test_an_ended_pod_without_a_claim_is_named_and_nothing_half_written(cluster, tmp_path, capsys):
    root, pods, write = cluster
    pods[1]["status"]["phase"] = "Succeeded"
    write()
    code, out, err = _gather(capsys, tmp_path / "results")
    assert code == 1 and out["copied"] == ["baseline"] and out["missing"] == ["ngram"]
    assert "ngram: not gathered: pod bench-ngram-x7k2p is Succeeded: its emptyDir is gone" in err
    run = tmp_path / "results" / RUN_ID
    assert sorted(p.name for p in run.iterdir()) == ["baseline", "host-provenance", "inputs", "manifest.json"]
    assert list(json.loads((run / "manifest.json").read_text())["methods"]) == ["baseline"]


def test_no_pods_no_access_and_no_kubectl_are_refused_naming_the_fix(cluster, tmp_path, capsys, monkeypatch):
    code = main(["k8s", "gather", "another-run", "--namespace", NAMESPACE, "--results", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert (
        code == 2
        and "no pod of run 'another-run' in namespace specstack; pass the run id the chart was "
        "installed with (--set runId) and --namespace"
        in err
    )
    assert main(["k8s", "gather", RUN_ID, "--namespace", "forbidden", "--results", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert (
        'get pods -l specstack.io/run-id=k8s-run-1 -o json` failed: error: pods is forbidden: User "dev" cannot list'
        in err
        and err.rstrip().endswith("check the kubectl context and namespace (--namespace)")
    )
    monkeypatch.setenv("KUBECTL", "")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert main(["k8s", "gather", RUN_ID, "--results", str(tmp_path / "r")]) == 2
    assert "kubectl not found: install it (or set KUBECTL=/path/to/kubectl)" in capsys.readouterr().err
    assert not (tmp_path / "r" / RUN_ID).exists()


def test_every_kubectl_call_parses_with_the_real_kubectl(cluster, tmp_path, capsys):
    """The argv gather gave the stand-in, replayed to the real kubectl v1.35.2 pointed at a closed port: each one
    gets as far as connecting (its verbs, flags and POD:PATH form parse); a misspelt flag does not."""
    root, _, _ = cluster
    _gather(capsys, tmp_path / "results")
    port = free_port()  # nothing listens there
    calls = _calls(root)
    assert {c[2] for c in calls} == {"get", "cp", "logs", "exec"}
    env = {**os.environ, "KUBECONFIG": os.devnull}

    def real(argv: list[str]) -> str:
        proc = subprocess.run(
            [str(tools()["kubectl"]), "--server", f"http://127.0.0.1:{port}", "--request-timeout", "2s", *argv],
            capture_output=True,
            text=True,
            timeout=30,
            env=env,
        )
        assert proc.returncode == 1
        return proc.stderr

    for argv in calls:
        assert f"The connection to the server 127.0.0.1:{port} was refused" in real(argv), argv
    assert "unknown flag: --containr" in real([a.replace("-c", "--containr") if a == "-c" else a for a in calls[1]])
