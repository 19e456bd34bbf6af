"""`specstack k8s gather RUN`: every Job of a run (deploy/helm/specstack) copied into one ordinary bundle,
results/<run-id>/, that `specstack report` and `compare` read like any other.

Each Job's collector wrote its method as a run of its own, under /results/jobs/<method>/<run-id>/ on its volume
(one tree per Job, so Jobs sharing a ReadWriteMany claim never write the same manifest). Through `kubectl`
(the binary $KUBECTL names, else the one on PATH) this lists the run's pods by label, copies each tree
(`kubectl cp`) from the results-access pod (a claim) or from the Job's held collector (an emptyDir), keeps each
container's log and what the pod ran, and merges the trees: method folders as they are, the manifest through
results.bundle.update_manifest. A method already in the bundle is left as it is, so gather can run again as
Jobs finish. An emptyDir collector is told it may end (`.gathered`) only after its tree is safely here.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from specstack.errors import UserError
from specstack.results import layout
from specstack.results.bundle import update_manifest
from specstack.results.files import atomic_write_json, atomic_write_text
from specstack.results.reader import read_manifest

RUN_LABEL = "specstack.io/run-id"
METHOD_LABEL = "specstack.io/method"
COMPONENT_LABEL = "specstack.io/component"
RELEASE_LABEL = "app.kubernetes.io/instance"
JOB_COMPONENT, ACCESS_COMPONENT = "method-job", "results-access"
JOB_RESULTS = "/results/jobs"  # the chart's `specstack.jobResults`: --results of each Job's collector
COLLECTOR, ACCESS_CONTAINER = "collector", "results"
GATHERED = ".gathered"  # the chart's collector waits for this file before it ends
TIMEOUT = 600


def kubectl_binary() -> str:
    exe = os.environ.get("KUBECTL") or shutil.which("kubectl")
    if not exe:
        raise UserError(
            "kubectl not found: install it (or set KUBECTL=/path/to/kubectl) with access to the "
            "cluster the run's Jobs ran on"
        )
    return exe


@dataclass
class Kubectl:
    exe: str
    namespace: str | None = None

    def __call__(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        argv = [self.exe, *(["-n", self.namespace] if self.namespace else []), *args]
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            raise UserError(f"`{' '.join(argv)}` did not answer in {TIMEOUT} s; check the cluster connection") from None
        if check and proc.returncode != 0:
            raise UserError(
                f"`{' '.join(argv)}` failed: {(proc.stderr or proc.stdout).strip()[:400]}; check the "
                "kubectl context and namespace (--namespace)"
            )
        return proc


@dataclass
class Gathered:
    run_dir: Path
    copied: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # already in the bundle, left as they were
    missing: dict[str, str] = field(default_factory=dict)


def _pods(kubectl: Kubectl, run_id: str, release: str | None) -> list[dict]:
    selector = f"{RUN_LABEL}={run_id}" + (f",{RELEASE_LABEL}={release}" if release else "")
    items = json.loads(kubectl("get", "pods", "-l", selector, "-o", "json").stdout).get("items") or []
    if not items:
        where = f"namespace {kubectl.namespace}" if kubectl.namespace else "the current namespace"
        raise UserError(
            f"no pod of run {run_id!r} in {where}{f' (release {release})' if release else ''}; "
            "pass the run id the chart was installed with (--set runId) and --namespace"
        )
    return items


def _labels(pod: dict) -> dict:
    return (pod.get("metadata") or {}).get("labels") or {}


def _job_pods(pods: list[dict]) -> dict[str, dict]:
    """method -> its newest Job pod."""
    out: dict[str, dict] = {}
    for pod in sorted(pods, key=lambda p: (p.get("metadata") or {}).get("creationTimestamp") or ""):
        labels = _labels(pod)
        if labels.get(COMPONENT_LABEL) == JOB_COMPONENT and labels.get(METHOD_LABEL):
            out[labels[METHOD_LABEL]] = pod
    return out


def _running(pod: dict) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running"


def pod_record(pod: dict) -> dict:
    """What ran, from the pod's status: images and the digests the node pulled, node, phase. Never the env."""
    meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    statuses = {
        s.get("name"): s for s in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or [])
    }
    containers = []
    for c in (spec.get("initContainers") or []) + (spec.get("containers") or []):
        s = statuses.get(c.get("name")) or {}
        containers.append(
            {
                "name": c.get("name"),
                "image": c.get("image"),
                "image_id": s.get("imageID"),
                "resources": c.get("resources") or {},
                "state": s.get("state"),
                "restart_count": s.get("restartCount"),
            }
        )
    return {
        "schema": "specstack.k8s_pod/1",
        "pod": meta.get("name"),
        "namespace": meta.get("namespace"),
        "uid": meta.get("uid"),
        "labels": meta.get("labels") or {},
        "node": spec.get("nodeName"),
        "phase": status.get("phase"),
        "start_time": status.get("startTime"),
        "containers": containers,
    }


def _copy_tree(kubectl: Kubectl, source: tuple[str, str], method: str, run_id: str, dest: Path) -> str | None:
    """Copy one Job's tree into dest; the reason when it cannot be copied."""
    pod, container = source
    proc = kubectl("cp", "-c", container, f"{pod}:{JOB_RESULTS}/{method}/{run_id}", str(dest), check=False)
    if proc.returncode != 0 or not dest.is_dir():
        return f"kubectl cp from {pod} failed: {(proc.stderr or proc.stdout).strip()[:300]}"
    return None


def _merge_tree(tree: Path, run_dir: Path, method: str, k8s_jobs: dict) -> None:
    """One Job's run folder into the bundle: its method folder(s), inputs, host provenance, and its manifest
    (the run's shared fields from the first Job gathered; each Job's own host under k8s.jobs)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    job_manifest = read_manifest(tree)
    for entry in sorted(tree.iterdir()):
        if entry.name in (layout.MANIFEST, GATHERED) or entry.name.startswith("."):
            continue
        if entry.is_dir() and entry.name in (layout.INPUTS_DIR, layout.HOST_DIR):
            shutil.copytree(entry, run_dir / entry.name, dirs_exist_ok=True)  # same inputs in every Job
        elif entry.name == method or entry.name.startswith(method + layout.FAILED_MARK):
            shutil.copytree(entry, run_dir / ".gather-staging" / entry.name)
            os.replace(run_dir / ".gather-staging" / entry.name, run_dir / entry.name)
    shutil.rmtree(run_dir / ".gather-staging", ignore_errors=True)
    existing = read_manifest(run_dir)
    shared = {k: v for k, v in job_manifest.items() if k not in ("methods", "schema") and k not in existing}
    update_manifest(run_dir, **shared, methods=job_manifest.get("methods") or {})
    k8s_jobs.setdefault(method, {})["host"] = job_manifest.get("host")


def _keep_logs(kubectl: Kubectl, pod: dict, method: str, run_dir: Path) -> dict:
    name = pod["metadata"]["name"]
    record = pod_record(pod)
    atomic_write_json(run_dir / layout.host_pod(method), record)
    logs = {}
    for c in record["containers"]:
        proc = kubectl("logs", name, "-c", c["name"], check=False)
        if proc.returncode == 0:
            logs[c["name"]] = layout.host_container_log(method, c["name"])
            atomic_write_text(run_dir / logs[c["name"]], proc.stdout)
    return {
        "pod": name,
        "node": record["node"],
        "phase": record["phase"],
        "logs": logs,
        "images": {c["name"]: c["image_id"] or c["image"] for c in record["containers"]},
    }


def _release(kubectl: Kubectl, pod: str, method: str, run_id: str) -> None:
    """Tell a collector holding its emptyDir that its tree is safely gathered (the chart waits for this file)."""
    kubectl("exec", pod, "-c", COLLECTOR, "--", "touch", f"{JOB_RESULTS}/{method}/{run_id}/{GATHERED}", check=False)


def gather(
    run_id: str,
    results_dir: Path,
    *,
    namespace: str | None = None,
    release: str | None = None,
    kubectl: Kubectl | None = None,
) -> Gathered:
    kubectl = kubectl or Kubectl(kubectl_binary(), namespace)
    pods = _pods(kubectl, run_id, release)
    jobs = _job_pods(pods)
    access = next((p for p in pods if _labels(p).get(COMPONENT_LABEL) == ACCESS_COMPONENT and _running(p)), None)
    run_dir = Path(results_dir) / run_id
    result = Gathered(run_dir)
    jobs_seen: dict[str, dict] = dict(read_manifest(run_dir).get("k8s", {}).get("jobs") or {})
    k8s = {"namespace": kubectl.namespace, "release": release, "jobs": jobs_seen}
    Path(results_dir).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".gather-{run_id}-", dir=results_dir) as tmp:
        for method, pod in sorted(jobs.items()):
            name = pod["metadata"]["name"]
            if (run_dir / method).exists():
                result.kept.append(method)
                if access is None and _running(pod):  # gathered before: the held collector may end
                    _release(kubectl, name, method, run_id)
                continue
            if access is None and not _running(pod):
                result.missing[method] = (
                    f"pod {name} is {(pod.get('status') or {}).get('phase')}: its emptyDir is "
                    "gone (gather while it waits, results.holdSeconds, or use "
                    "results.existingClaim)"
                )
                continue
            source = (access["metadata"]["name"], ACCESS_CONTAINER) if access else (name, COLLECTOR)
            why = _copy_tree(kubectl, source, method, run_id, Path(tmp) / method)
            if why:
                result.missing[method] = why
                continue
            _merge_tree(Path(tmp) / method, run_dir, method, jobs_seen)
            jobs_seen.setdefault(method, {}).update(_keep_logs(kubectl, pod, method, run_dir))
            result.copied.append(method)
            if access is None:  # safely here: the held collector may end
                _release(kubectl, name, method, run_id)
    if result.copied:
        update_manifest(run_dir, k8s=k8s)
    return result
