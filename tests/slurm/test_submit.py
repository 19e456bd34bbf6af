"""slurm/submit.py and `specstack slurm submit`'s checks: every user error before anything is submitted."""

from __future__ import annotations

import pytest

from specstack.errors import UserError
from specstack.slurm import submit
from tests.support import run_main

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("arg", ["--port", "--run-id=x", "--results", "--force", "--method"])
def test_options_each_task_sets_itself_are_refused(arg):
    with pytest.raises(UserError, match="each Slurm task sets itself"):
        submit.check_run_args(["--tasks", "code", arg])


def test_a_bad_run_arg_is_refused_by_the_run_parser_before_sbatch(capsys, tmp_path):
    got = run_main(
        capsys,
        ["slurm", "submit", "--methods", "baseline", "--results", str(tmp_path), "--run-args", "--concurrency x"],
    )
    assert got.code == 2 and "is not accepted by `specstack run`" in got.err and "nothing was submitted" in got.err
    assert not any(tmp_path.iterdir())


def test_an_unknown_method_is_refused(capsys, tmp_path):
    got = run_main(capsys, ["slurm", "submit", "--methods", "baseline,nogram", "--results", str(tmp_path)])
    assert got.code == 2 and "nogram" in got.err and not any(tmp_path.iterdir())


def test_without_sbatch_the_error_names_the_install(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(UserError, match="sbatch not found.*slurm-client"):
        submit.sbatch_binary()


def test_a_missing_specstack_names_the_venv(tmp_path):
    with pytest.raises(UserError, match="make venv PLATFORM=gpu"):
        submit.check_specstack(str(tmp_path / "bin" / "specstack"))


def test_gather_of_a_run_never_submitted_names_submit(capsys, tmp_path):
    (tmp_path / "r1").mkdir()
    got = run_main(capsys, ["slurm", "gather", "r1", "--results", str(tmp_path)])
    assert got.code == 2 and "specstack slurm submit" in got.err


def test_a_resubmit_while_tasks_still_queue_is_refused(monkeypatch, tmp_path):
    monkeypatch.setattr(submit.facts, "active", lambda ids: ["11_1"] if ids == ["10", "11"] else [])
    subs = [{"arrays": [{"job_id": "10"}, {"job_id": "11"}]}]
    with pytest.raises(UserError, match=r"still has Slurm tasks queued or running \(11_1\).*scancel"):
        submit.check_queue(tmp_path / "r1", subs)
    submit.check_queue(tmp_path / "r1", [])


ACQUIRE = "import sys\nfrom specstack.results import run_lock\nrun_lock.acquire(sys.argv[1])\n"
HOLD = ACQUIRE + "print('held', flush=True)\nimport time\ntime.sleep(120)\n"


def test_the_tasks_of_a_submission_share_the_runs_lock_and_another_harness_is_refused(monkeypatch, tmp_path):
    """Array tasks of one run id run at once by design: the submission's token (in its plan, set by `slurm task`)
    lets every task of it join the lock the first one took; a native run of that id is refused meanwhile, and so is
    a submit while another harness measures into the run."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    from specstack.results import run_lock
    from specstack.slurm.script import SbatchOptions

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sbatch").write_text("#!/bin/sh\necho 42\n")
    (bin_dir / "sbatch").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setattr(submit.facts, "active", lambda ids: [])
    run_dir, exe = tmp_path / "r1", str(Path(sys.executable).with_name("specstack"))

    def process(script: str, token: str | None = None, **kw):
        env = {k: v for k, v in os.environ.items() if k != run_lock.TOKEN_ENV}
        return (subprocess.Popen if kw.pop("background", False) else subprocess.run)(
            [sys.executable, "-c", script, str(run_dir)],
            env={**env, **({run_lock.TOKEN_ENV: token} if token else {})},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            **kw,
        )

    native = process(HOLD, background=True)  # `specstack run` of that run id, measuring
    try:
        assert native.stdout.readline() == "held\n"
        with pytest.raises(run_lock.RunInUse, match=f"pid {native.pid}"):
            submit.submit(run_dir, ["baseline"], [], SbatchOptions(), specstack=exe, baseline_of=lambda m: None)
    finally:
        native.kill()
        native.wait()
    submit.submit(run_dir, ["baseline"], [], SbatchOptions(), specstack=exe, baseline_of=lambda m: None)
    token = json.loads((run_dir / ".slurm" / "submission-1.json").read_text())["lock_token"]
    first = process(HOLD, token, background=True)  # the first task: holds the run's lock
    try:
        assert first.stdout.readline() == "held\n"
        assert process(ACQUIRE, token).returncode == 0, "a task of the same submission was refused"
        refused = process(ACQUIRE)
        assert refused.returncode != 0 and f"pid {first.pid}" in refused.stderr
    finally:
        first.kill()
        first.wait()
