"""slurm/script.py: the arrays of a submission (baselines first) and the batch script of one array."""

from __future__ import annotations

import pytest

from specstack.config import methods
from specstack.slurm.script import SbatchOptions, array_spec, directives, render, split_arrays

pytestmark = pytest.mark.unit


def test_baselines_go_first_and_each_array_keeps_the_given_order():
    got = split_arrays(["ngram", "baseline", "mtp", "suffix", "mtp-baseline"], methods.baseline_of)
    assert got == [("baselines", ["baseline", "mtp-baseline"]), ("methods", ["ngram", "mtp", "suffix"])]


def test_an_empty_array_is_left_out():
    assert split_arrays(["ngram"], methods.baseline_of) == [("methods", ["ngram"])]
    assert split_arrays(["baseline"], methods.baseline_of) == [("baselines", ["baseline"])]


def test_array_spec_throttles_only_when_asked():
    assert array_spec(3, None) == "0-2"
    assert array_spec(3, 1) == "0-2%1"


def test_directives_name_only_what_is_set():
    lines = directives(
        SbatchOptions(gres="gpu:1", time="2:00:00", partition="gpu", extra=["--exclusive"]),
        job_name="specstack-r-methods",
        count=2,
        output="/shared/r/.slurm/%A_%a.out",
    )
    assert lines == [
        "--job-name=specstack-r-methods",
        "--array=0-1",
        "--output=/shared/r/.slurm/%A_%a.out",
        "--open-mode=append",
        "--ntasks=1",
        "--partition=gpu",
        "--time=2:00:00",
        "--gres=gpu:1",
        "--exclusive",
    ]
    assert not any(
        line.startswith("--gres") for line in directives(SbatchOptions(gres=None), job_name="j", count=1, output="o")
    )


def test_the_script_execs_the_task_with_quoted_paths():
    text = render(
        SbatchOptions(),
        run_id="r1",
        array="methods",
        methods=["ngram", "suffix"],
        specstack="/shared/my venv/bin/specstack",
        plan="/shared/r1/.slurm/submission-1.json",
        output="/shared/r1/.slurm/%A_%a.out",
    )
    lines = text.splitlines()
    assert lines[0] == "#!/bin/bash"
    assert "#   0: ngram" in lines and "#   1: suffix" in lines
    assert "#SBATCH --gres=gpu:1" in lines  # the GPU form's default
    assert lines[-1] == "exec '/shared/my venv/bin/specstack' slurm task /shared/r1/.slurm/submission-1.json methods"
