"""The run's workloads from its Options: built-in tasks and datasets written once into inputs/, the same inputs
asked for by every method of the run, and dataset options that cannot work refused before anything starts."""

import pytest

from specstack.datasets import fetch, pinned
from specstack.errors import UserError
from specstack.runs.options import Options, load_tasks
from tests.datasets.wheels import build

pytestmark = pytest.mark.unit


def options(tmp_path, **fields) -> Options:
    return Options(method="ngram", run_id="r", results_dir=tmp_path, num_prompts=3, **fields)


def test_a_dataset_task_is_written_into_inputs_beside_the_built_in_ones(tmp_path, monkeypatch):
    monkeypatch.setitem(pinned.WHEELS, "humaneval", build(tmp_path / "cache", "humaneval"))
    monkeypatch.setenv("SPECSTACK_DATASETS", str(tmp_path / "cache"))
    opts = options(tmp_path, tasks=("code", "humaneval"), datasets=("humaneval",))
    opts.validate()
    tasks = load_tasks(opts, tmp_path / "inputs")
    assert list(tasks) == ["code", "humaneval"]
    assert sorted(p.name for p in (tmp_path / "inputs").iterdir()) == [
        "code.acceptance.jsonl",
        "code.perf.jsonl",
        "humaneval.acceptance.jsonl",
        "humaneval.dataset.json",
        "humaneval.perf.jsonl",
    ]
    assert [r["question_id"] for r in tasks["humaneval"].acceptance] == ["HumanEval/0", "HumanEval/1", "HumanEval/2"]
    assert load_tasks(opts, tmp_path / "inputs")["humaneval"].acceptance == tasks["humaneval"].acceptance
    # another method of the same run asking for other rows of the set is refused
    more = Options(
        method="ngram", run_id="r", results_dir=tmp_path, num_prompts=4, tasks=("humaneval",), datasets=("humaneval",)
    )
    with pytest.raises(UserError, match="humaneval.acceptance.jsonl differs"):
        load_tasks(more, tmp_path / "inputs")


def test_workload_files_of_a_dataset_task_win_over_the_dataset(tmp_path, monkeypatch):
    """As `specstack reproduce` runs it: the original's inputs/ files, the dataset not read again."""
    perf, acc = tmp_path / "p.jsonl", tmp_path / "a.jsonl"
    perf.write_text('{"prompt": "hi", "output_tokens": 4}\n')
    acc.write_text('{"id": "sharegpt-000", "prompt": "hi", "max_tokens": 4, "category": null}\n')
    opts = options(tmp_path, tasks=("sharegpt",), datasets=("sharegpt",), workload_files={"sharegpt": (perf, acc)})
    monkeypatch.setenv("SPECSTACK_DATASETS", str(tmp_path / "empty"))  # reading the set would have to download
    monkeypatch.setattr(fetch, "_download", lambda *a: pytest.fail("the dataset was fetched again"))
    tasks = load_tasks(opts, tmp_path / "inputs")
    assert tasks["sharegpt"].acceptance[0]["category"] is None and tasks["sharegpt"].perf_path == perf


@pytest.mark.parametrize(
    "fields, message",
    [
        (dict(tasks=("code",), datasets=("mt-bench",)), "--dataset mt-bench is a task the run leaves out"),
        (dict(tasks=("mt-bench",), datasets=("mt-bench", "mt-bench")), "names a set twice"),
        (dict(tasks=("x",), datasets=("x",)), "unknown dataset 'x'"),
    ],
)
def test_dataset_options_that_cannot_work_are_refused(tmp_path, fields, message):
    with pytest.raises(UserError, match=message):
        options(tmp_path, **fields).validate()
