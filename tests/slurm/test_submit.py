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
    got = run_main(capsys, ["slurm", "submit", "--methods", "baseline", "--results", str(tmp_path),
                            "--run-args", "--concurrency x"])
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
