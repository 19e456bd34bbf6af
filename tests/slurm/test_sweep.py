"""A sweep as Slurm job arrays on a real single-node Slurm (slurmctld + slurmd + munge started by the tests,
CPU node, vLLM's CPU build, tiny models): `specstack slurm submit` puts baseline in one array and ngram and
suffix in a second that depends on it; ngram's task is cancelled with scancel while its server starts;
`specstack slurm gather` names it cancelled in the manifest; a resubmit (`make sweep SCHEDULER=slurm`) runs
ngram alone and gather then makes the whole bundle, its report included.

Oracles: each method's summary passes every cross-check identity exactly in every window; greedy outputs of
ngram and suffix equal the baseline's request by request; Slurm's facts per method (job and array ids, node,
time limit, elapsed, state) agree with the task's own record and with the submission; the baselines array
ended before the methods array started."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from specstack.results.reader import load_run
from specstack.results.records import read_records

pytestmark = pytest.mark.integration

SPECSTACK = Path(sys.executable).with_name("specstack")
REPO = Path(__file__).resolve().parents[2]
METHODS = ("baseline", "ngram", "suffix")
RUN_ID = "slurm-sweep"
TIME_LIMIT = "00:10:00"


def run_args(models_dir: Path) -> str:
    # fewest requests that still exercise every identity: 4 greedy answers of 32 tokens, no bench cells
    return (
        f"--model-set tiny --platform cpu-native --models-dir {models_dir} --tasks code --num-prompts 4 "
        "--acceptance-max-tokens 32 --warmup-requests 1 --skip-bench"
    )


def specstack(cluster, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(SPECSTACK), "slurm", *args], capture_output=True, text=True, env=cluster.env, timeout=300
    )


def submit(cluster, results: Path, models_dir: Path) -> dict:
    proc = specstack(
        cluster,
        "submit",
        "--methods",
        ",".join(METHODS),
        "--run-id",
        RUN_ID,
        "--results",
        str(results),
        "--run-args",
        run_args(models_dir),
        "--time",
        "10",
        "--max-parallel",
        "1",
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def resubmit_with_make(cluster, results: Path, models_dir: Path) -> dict:
    """The same sweep again through `make sweep SCHEDULER=slurm` (make's knobs become the run args)."""
    proc = subprocess.run(
        [
            "make",
            "--no-print-directory",
            "sweep",
            "SCHEDULER=slurm",
            "PLATFORM=cpu",
            "MODEL_SET=tiny",
            f"RUN_ID={RUN_ID}",
            "SWEEP_METHODS=" + " ".join(METHODS),
            "SWEEP_MTP_METHODS=",
            "RUN_ARGS=" + run_args(models_dir).replace("--model-set tiny --platform cpu-native ", ""),
            "SLURM_ARGS=--time 10 --max-parallel 1",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**cluster.env, "SPECSTACK_RESULTS": str(results)},
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def wait_for(condition, seconds: float, what: str, cluster):
    deadline = time.monotonic() + seconds
    while not (found := condition()):
        assert time.monotonic() < deadline, f"no {what} after {seconds:.0f} s; queue: {cluster.queued()}"
        time.sleep(0.2)
    return found


def gather(cluster, run_dir: Path, *extra: str) -> tuple[int, dict, str]:
    proc = specstack(cluster, "gather", str(run_dir), *extra)
    return proc.returncode, json.loads(proc.stdout), proc.stderr


@pytest.fixture(scope="module")
def slurm_run(slurm_cluster, models_dir, tmp_path_factory):
    """Submit, scancel ngram mid-run, gather (ngram missing), resubmit, gather: what each step said."""
    results = tmp_path_factory.mktemp("shared")  # the "shared" file system: one node mounts it
    run_dir = results / RUN_ID
    first = submit(slurm_cluster, results, models_dir)
    methods_array = next(a for a in first["arrays"] if a["name"] == "methods")
    ngram_task = f"{methods_array['job_id']}_{methods_array['methods'].index('ngram')}"
    # mid-run: its task is running and its harness is starting ngram's server (the staged server log exists)
    wait_for(lambda: list(run_dir.glob(".ngram.staging-*/server.log")), 240, "ngram server starting", slurm_cluster)
    cancel = slurm_cluster.run("scancel", ngram_task)
    assert cancel.returncode == 0, cancel.stderr
    slurm_cluster.wait_idle(300)
    code1, gathered1, err1 = gather(slurm_cluster, run_dir, "--no-report")
    manifest1 = json.loads((run_dir / "manifest.json").read_text())
    second = resubmit_with_make(slurm_cluster, results, models_dir)
    slurm_cluster.wait_idle(300)
    code2, gathered2, err2 = gather(slurm_cluster, run_dir)
    return {
        "run_dir": run_dir,
        "first": first,
        "second": second,
        "ngram_task": ngram_task,
        "gather1": (code1, gathered1, err1),
        "manifest1": manifest1,
        "gather2": (code2, gathered2, err2),
        "manifest": json.loads((run_dir / "manifest.json").read_text()),
    }


def test_submit_puts_baselines_first_and_methods_in_a_dependent_array(slurm_run):
    arrays = slurm_run["first"]["arrays"]
    assert [(a["name"], a["methods"]) for a in arrays] == [
        ("baselines", ["baseline"]),
        ("methods", ["ngram", "suffix"]),
    ]
    script = (slurm_run["run_dir"] / ".slurm" / arrays[1]["script"]).read_text()
    assert "#SBATCH --array=0-1%1" in script and "#SBATCH --time=10" in script
    assert "--gres" not in script  # the CPU platform asks for no GPU
    ends = {m: f["end"] for m, f in slurm_run["manifest1"]["slurm"]["methods"].items()}
    assert ends["baseline"]["end"] <= ends["suffix"]["start"], ends  # the dependency held


def test_a_cancelled_task_is_named_in_the_bundle(slurm_run):
    code, gathered, err = slurm_run["gather1"]
    assert code == 1, err
    assert gathered["missing"] == {"ngram": "cancelled"} and sorted(gathered["ok"]) == ["baseline", "suffix"]
    entry = slurm_run["manifest1"]["methods"]["ngram"]
    assert entry["status"] == "cancelled" and entry["slurm_state"] == "CANCELLED", entry
    assert f"task {slurm_run['ngram_task']}" in entry["error"] and "interrupted (SIGTERM)" in entry["error"], entry
    assert "specstack slurm submit --run-id slurm-sweep" in entry["error"]
    [failed] = slurm_run["run_dir"].glob("ngram.failed-*")  # the harness kept what it had, as failed
    assert json.loads((failed / "summary.json").read_text())["error_type"] == "Interrupted"


def test_a_resubmit_runs_only_what_is_missing_and_gather_completes_the_bundle(slurm_run):
    second = slurm_run["second"]
    assert sorted(second["already_done"]) == ["baseline", "suffix"]
    assert [(a["name"], a["methods"]) for a in second["arrays"]] == [("methods", ["ngram"])]
    code, gathered, err = slurm_run["gather2"]
    assert code == 0, err
    assert sorted(gathered["ok"]) == sorted(METHODS) and gathered["missing"] == {}
    run = load_run(slurm_run["run_dir"])  # the one reader, as report and compare read it
    assert sorted(run.methods) == sorted(METHODS) and not run.warnings, run.warnings
    assert all(f.superseded for f in run.failed)  # the cancelled attempt, superseded by the resubmit's
    assert (slurm_run["run_dir"] / "report.md").exists() and (slurm_run["run_dir"] / "SHA256SUMS").exists()
    assert slurm_run["manifest"]["methods"]["ngram"]["status"] == "ok"


def test_every_method_reconciles_exactly_and_equals_its_baseline(slurm_run):
    run_dir = slurm_run["run_dir"]
    texts = {}
    for method in METHODS:
        s = json.loads((run_dir / method / "summary.json").read_text())
        assert s["status"] == "ok" and s["crosscheck"]["ok"], (method, s["crosscheck"])
        assert [w["name"] for w in s["windows"]] == ["warmup", "acceptance/code"]
        assert all(c["ok"] for w in s["windows"] for c in w["checks"])
        if method != "baseline":  # plain decode without bench cells has no identity; every spec window has them
            assert all(w["checks"] for w in s["windows"]), method
            assert s["tasks"]["code"]["num_draft_tokens"] > 0, method
        texts[method] = [r["text"] for r in read_records(run_dir / method / "acceptance" / "code.jsonl")]
    assert len(texts["baseline"]) == 4
    assert texts["ngram"] == texts["baseline"] and texts["suffix"] == texts["baseline"]


def test_slurm_facts_are_recorded_per_method(slurm_run):
    slurm = slurm_run["manifest"]["slurm"]
    assert slurm["facts_source"].startswith("scontrol")  # this cluster keeps no accounting: sacct refuses
    host = os.uname().nodename.split(".")[0]
    jobs = {a["job_id"]: a for s in slurm["submissions"] for a in s["arrays"]}
    for method in METHODS:
        f = slurm["methods"][method]
        end, start = f["end"], f["start"]
        assert end["state"] == "COMPLETED" and end["exit_code"] == "0:0", (method, end)
        assert end["node"] == host and start["node"] == host
        assert end["time_limit"] == start["time_limit"] == TIME_LIMIT
        assert end["elapsed"] not in (None, "00:00:00")
        assert (end["array_job_id"], end["array_task_id"]) == (f["array_job_id"], f["array_task_id"])
        assert jobs[f["array_job_id"]]["methods"][f["array_task_id"]] == method
        assert start["job_id"] == end["job_id"] and start["array_job_id"] == f["array_job_id"]
        assert start["cuda_visible_devices"] is None and start["gres_index"] is None  # a CPU node: no GPU
        summary = json.loads((slurm_run["run_dir"] / method / "summary.json").read_text())
        assert summary["provenance"]["host"]["slurm"]["job_id"] == end["job_id"]  # the result is that task's
    assert slurm["methods"]["ngram"]["submission"] == 2


def test_a_task_that_fails_is_named_failed_with_its_log(slurm_cluster, tmp_path):
    """A method whose task fails (its models are not where the run args say: the harness's own checks stop it
    before any server) is `failed` in the manifest, with Slurm's exit code and the task's log, which says why."""
    results, run_id = tmp_path / "shared", "slurm-fail"
    proc = specstack(
        slurm_cluster,
        "submit",
        "--methods",
        "baseline",
        "--run-id",
        run_id,
        "--results",
        str(results),
        "--run-args",
        f"--model-set tiny --platform cpu-native --models-dir {tmp_path / 'no-models'}",
    )
    assert proc.returncode == 0, proc.stderr
    slurm_cluster.wait_idle(120)
    code, gathered, err = gather(slurm_cluster, results / run_id, "--no-report")
    assert code == 1 and gathered["missing"] == {"baseline": "failed"}, err
    entry = json.loads((results / run_id / "manifest.json").read_text())["methods"]["baseline"]
    assert entry["slurm_state"] == "FAILED" and "exit 2:0" in entry["error"], entry
    log = (results / run_id / entry["error"].split("the task's log: ", 1)[1].split(";", 1)[0]).read_text()
    [said] = [line for line in log.splitlines() if line.startswith("specstack: error: ")]
    assert f"the harness said: {said.removeprefix('specstack: error: ')}" in entry["error"]  # why, in the bundle
    assert str(tmp_path / "no-models") in said
