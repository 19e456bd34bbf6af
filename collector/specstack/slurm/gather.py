"""`specstack slurm gather RUN`: every task of a run's submissions checked against Slurm and against the run
folder, into one ordinary bundle: each method's status in the manifest (a task cancelled, preempted, failed or
timed out is named as such, with the fix), Slurm's facts per method under the manifest's `slurm`, then the
report and SHA256SUMS as a native sweep ends. Gather may run again at any time; it never touches a result."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from specstack.errors import UserError
from specstack.results import layout
from specstack.results.bundle import update_manifest
from specstack.results.reader import good_result, read_manifest, read_summary
from specstack.slurm import facts
from specstack.slurm.submit import SLURM_DIR, array_job_ids, read_submissions, slurm_dir


@dataclass
class Gathered:
    run_dir: Path
    ok: list[str] = field(default_factory=list)
    missing: dict[str, str] = field(default_factory=dict)  # method -> status (cancelled, timed out, ...)
    facts_source: str = ""


def latest_attempts(submissions: list[dict]) -> dict[str, dict]:
    """method -> where its latest attempt ran: array job id, task index, submission number."""
    out: dict[str, dict] = {}
    for sub in submissions:
        for array in sub["arrays"]:
            for i, method in enumerate(array["methods"]):
                out[method] = {
                    "array_job_id": array["job_id"],
                    "array_task_id": i,
                    "array": array["name"],
                    "submission": sub["submission"],
                }
    return out


def _failed_summary(run_dir: Path, entry: dict) -> dict | None:
    folder = entry.get("dir")
    return read_summary(run_dir / folder) if folder and (run_dir / folder).is_dir() else None


def method_status(slurm: dict | None, harness: dict | None, run_id: str, log: str = "") -> tuple[str, str]:
    """(status, error) of a method without a good result: Slurm's word for how its task ended first (a cancelled
    task's harness only saw SIGTERM), the harness's reason after it, then where the task's log is."""
    said = [f"the harness said: {harness['error']}"] if harness and harness.get("error") else []
    said += [f"the task's log: {log}"] if log else []
    if slurm is None:
        return "unknown", "; ".join(
            [
                "no Slurm record of its task (cancelled before it started, or forgotten by "
                "slurmctld after MinJobAge without accounting)",
                *said,
            ]
        )
    status = facts.status_of(slurm["state"])
    if status in ("pending", "running", "suspended"):
        return status, f"Slurm: {slurm['state']}; gather again when it has ended"
    if status == "completed":  # the task ended 0 but left no good result (it should not: say so)
        status = "failed"
    where = f"task {slurm['array_job_id']}_{slurm['array_task_id']} on {slurm.get('node') or '?'}"
    return status, "; ".join(
        [
            f"Slurm: {slurm['state']} ({where}, elapsed {slurm.get('elapsed')}, limit "
            f"{slurm.get('time_limit')}, exit {slurm.get('exit_code')})",
            *said,
            f"`specstack slurm submit --run-id {run_id}` runs it again",
        ]
    )


def gather(run_dir: Path) -> Gathered:
    run_dir = Path(run_dir)
    submissions = read_submissions(run_dir)
    if not submissions:
        raise UserError(
            f"{run_dir} has no Slurm submission ({SLURM_DIR}/ is empty or missing); submit the run "
            "with `specstack slurm submit`, or pass the run folder it wrote into"
        )
    source, records = facts.query(array_job_ids(submissions))
    manifest = read_manifest(run_dir)
    result = Gathered(run_dir, facts_source=source)
    statuses, per_method = {}, {}
    for method, attempt in latest_attempts(submissions).items():
        slurm = records.get((attempt["array_job_id"], attempt["array_task_id"]))
        start = _json(run_dir / layout.host_record(method)).get("slurm")
        per_method[method] = {
            **attempt,
            "end": slurm,
            "start": start,
            "log": f"{SLURM_DIR}/{attempt['array_job_id']}_{attempt['array_task_id']}.out",
        }
        if good_result(run_dir, method) is not None:
            result.ok.append(method)
            statuses[method] = {"slurm_state": (slurm or {}).get("state")}  # an earlier attempt's is stale
            continue
        entry = (manifest.get("methods") or {}).get(method) or {}
        harness = _failed_summary(run_dir, entry) or _error_in_log(run_dir / per_method[method]["log"])
        status, error = method_status(slurm, harness, run_dir.name, per_method[method]["log"])
        statuses[method] = {"status": status, "error": error, "slurm_state": (slurm or {}).get("state")}
        result.missing[method] = status
    update_manifest(
        run_dir,
        methods=statuses,
        slurm={
            "facts_source": source,
            "submissions": [{k: s[k] for k in ("submission", "time", "arrays", "sbatch")} for s in submissions],
            "methods": per_method,
        },
    )
    return result


def finish(run_dir: Path, *, report: bool) -> None:
    """What a native sweep does at its end: the report (with every method named, failed ones too), then the
    console tables and SHA256SUMS over the whole run."""
    if report:
        from specstack.report.build import write_report  # pandas and matplotlib only when a report is written

        write_report(run_dir)
    from specstack.report.console_table import seal_run

    seal_run(run_dir)


def _error_in_log(path: Path) -> dict | None:
    """A task that stopped before its method had a bundle (a check failed): the error it printed, from its log."""
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return None
    said = [line.removeprefix("specstack: error: ") for line in lines if line.startswith("specstack: error: ")]
    return {"error": said[-1]} if said else None


def _json(path: Path) -> dict:
    try:
        return json.loads(path.read_text()) if path.exists() else {}
    except json.JSONDecodeError:
        return {}


def active_tasks(run_dir: Path) -> list[str]:
    return facts.active(array_job_ids(read_submissions(run_dir)))


def check_dir(run_dir: Path) -> Path:
    if not slurm_dir(run_dir).is_dir():
        raise UserError(
            f"{run_dir} holds no Slurm submission; pass the run folder (or run id with --results) "
            "that `specstack slurm submit` wrote into"
        )
    return run_dir
