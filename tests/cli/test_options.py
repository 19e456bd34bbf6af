"""The shared option groups: what a command line turns into (run, sweep, sweep-k)."""

from __future__ import annotations

import argparse

import pytest

from specstack.cli import demo, run, sweep_k
from specstack.cli.options import options_from_args, run_tasks
from specstack.runs.options import Options, load_tasks

pytestmark = pytest.mark.unit


def parse(module, argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    module.register(parser.add_subparsers())
    return parser.parse_args(argv)


def test_sweep_k_command_line():
    args = parse(sweep_k, ["sweep-k", "--method", "ngram", "--k", "1,2,3"])
    assert args.ks == "1,2,3" and args.concurrency == (1,) and not args.no_baseline and not args.k_per_load
    assert parse(sweep_k, ["sweep-k", "--method", "ngram", "--k", "1,2", "--k-per-load"]).k_per_load
    args = parse(sweep_k, ["sweep-k", "--method", "ngram", "--k", "2", "--concurrency", "4"])
    assert args.concurrency == (4,)
    # its --k is the list of K, never the single-K shorthand of `run`
    assert options_from_args(args, "ngram").spec_override is None


def test_run_k_is_the_num_speculative_tokens_shorthand():
    args = parse(run, ["run", "--method", "ngram", "--k", "3", "--spec-override", '{"prompt_lookup_max": 2}'])
    opts = options_from_args(args, "ngram")
    assert opts.spec_override == {"prompt_lookup_max": 2, "num_speculative_tokens": 3}
    assert opts.concurrencies == (1, 8)


def test_url_alone_means_the_url_runtime():
    """A user who names a server expects it to be measured, not a native server started beside it."""
    opts = options_from_args(parse(run, ["run", "--method", "ngram", "--url", "http://127.0.0.1:9"]), "ngram")
    assert (opts.runtime, opts.url, opts.trust_server) == ("url", "http://127.0.0.1:9", False)
    opts = options_from_args(parse(run, ["run", "--method", "ngram"]), "ngram")
    assert (opts.runtime, opts.url) == ("native", None)
    args = parse(sweep_k, ["sweep-k", "--method", "ngram", "--k", "2", "--url", "http://h:1", "--trust-server"])
    opts = options_from_args(args, "ngram")
    assert (opts.runtime, opts.trust_server) == ("url", True)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--runtime", "native", "--url", "http://127.0.0.1:9"], "--runtime native starts its own server"),
        (["--runtime", "url"], "--runtime url needs --url"),
        (["--url", "localhost:8000"], "--url must start with http:// or https://"),
        (["--trust-server"], "--trust-server is for --runtime url"),
    ],
)
def test_runtime_and_url_that_do_not_fit_are_refused(argv, message):
    from specstack.errors import UserError

    opts = options_from_args(parse(run, ["run", "--method", "ngram", *argv]), "ngram")
    with pytest.raises(UserError, match=message.replace("+", r"\+")):
        opts.validate()


def test_temperatures_become_sampled_phases_and_bad_ones_are_refused():
    from specstack.errors import UserError

    opts = options_from_args(parse(run, ["run", "--method", "ngram", "--temperatures", "0.6,1.0"]), "ngram")
    assert opts.temperatures == (0.6, 1.0)
    opts.validate()
    assert options_from_args(parse(run, ["run", "--method", "ngram"]), "ngram").temperatures == ()
    for bad, message in (("0", r"must lie in \(0, 2\]"), ("2.5", r"got 2.5"), ("1,1", "lists a value twice")):
        opts = options_from_args(parse(run, ["run", "--method", "ngram", "--temperatures", bad]), "ngram")
        with pytest.raises(UserError, match=message):
            opts.validate()
    with pytest.raises(SystemExit):
        parse(run, ["run", "--method", "ngram", "--temperatures", "hot"])


def test_datasets_are_tasks_of_their_name_alone_unless_tasks_names_more():
    opts = options_from_args(parse(run, ["run", "--method", "ngram", "--dataset", "mt-bench"]), "ngram")
    assert (opts.tasks, opts.datasets) == (("mt-bench",), ("mt-bench",))
    args = parse(
        run,
        ["run", "--method", "ngram", "--tasks", "code", "--dataset", "humaneval", "--dataset", "spec-bench=q.jsonl"],
    )
    opts = options_from_args(args, "ngram")
    assert (opts.tasks, opts.datasets) == (("code", "humaneval", "spec-bench"), ("humaneval", "spec-bench=q.jsonl"))
    opts.validate()
    args = parse(sweep_k, ["sweep-k", "--method", "ngram", "--k", "2", "--dataset", "sharegpt"])
    assert options_from_args(args, "ngram").tasks == ("sharegpt",)
    assert options_from_args(parse(run, ["run", "--method", "ngram"]), "ngram").tasks == ("code", "chat")


def test_a_workload_is_measured_like_a_dataset(tmp_path):
    """`--workload mine=P,A` without `--tasks mine` once validated the files, measured code and chat instead and
    said ok: the task a user gives files for is measured, alone without --tasks, beside --tasks with it."""
    rows = tmp_path / "mine.jsonl"
    rows.write_text('{"prompt": "a"}\n')
    workload = ["--workload", f"mine={rows},{rows}"]
    opts = options_from_args(parse(run, ["run", "--method", "ngram", *workload]), "ngram")
    assert opts.tasks == ("mine",)
    opts.validate()
    assert list(load_tasks(opts, tmp_path / "inputs")) == ["mine"]
    opts = options_from_args(
        parse(run, ["run", "--method", "ngram", "--tasks", "code", *workload, "--dataset", "mt-bench"]), "ngram"
    )
    assert opts.tasks == ("code", "mt-bench", "mine")
    # `--workload code=...` alone: code from the user's files, and nothing else
    opts = options_from_args(parse(run, ["run", "--method", "ngram", "--workload", f"code={rows},{rows}"]), "ngram")
    assert opts.tasks == ("code",)


def test_a_workload_the_tasks_leave_out_is_refused_for_callers_without_the_command_line(tmp_path):
    from specstack.errors import UserError

    opts = Options(method="ngram", run_id="x", tasks=("code",), workload_files={"mine": (tmp_path / "p.jsonl",) * 2})
    with pytest.raises(
        UserError,
        match=r"--workload mine is a task the run leaves out: add it to --tasks "
        r"\(code,mine\) or drop --tasks",
    ):
        opts.validate()


def test_the_demo_runs_on_datasets_instead_of_code_and_chat_when_asked():
    args = parse(demo, ["demo", "--dataset", "mt-bench", "--dataset", "humaneval"])
    assert args.datasets == ["mt-bench", "humaneval"]
    assert run_tasks(None, args.datasets) == ("mt-bench", "humaneval")
    assert run_tasks(None, parse(demo, ["demo"]).datasets) == ("code", "chat")
