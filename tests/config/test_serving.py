"""config/serving.py: Runtime and Platform are StrEnums, so what a run writes (JSON) and what the command line takes
are the same strings as before they existed; Platform is services/methods.toml's [platforms], in its order."""

from __future__ import annotations

import argparse
import json
import tomllib

import pytest

from specstack.cli import run
from specstack.cli.options import options_from_args
from specstack.config import methods
from specstack.config.serving import Platform, Runtime, device, on_gpu
from specstack.errors import UserError
from specstack.runs.options import Options

from ..support import REPO

pytestmark = pytest.mark.unit


def test_platform_is_the_platforms_of_methods_toml_in_their_order():
    """A platform added to methods.toml without a member here (or the other way round) fails."""
    table = tomllib.loads((REPO / "services" / "methods.toml").read_text())["platforms"]
    assert list(Platform) == list(table)
    assert list(methods.load()["platforms"]) == list(Platform)


def test_every_platform_serves_on_a_gpu_or_a_cpu():
    """The device is the name's first word (parallel sweeps, slurm --gres and preflight read it so)."""
    assert {p: device(p) for p in Platform} == {p: p.value.split("-")[0] for p in Platform}
    assert {device(p) for p in Platform} == {"gpu", "cpu"}
    assert [p for p in Platform if p.on_gpu] == [p for p in Platform if p.startswith("gpu-")]
    assert on_gpu("gpu-of-an-older-run") and not on_gpu("cpu-native") and not on_gpu("")


def test_members_are_their_strings():
    assert (Runtime.NATIVE, Runtime.URL) == ("native", "url")
    assert f"--platform {Platform.CPU_NATIVE}" == "--platform cpu-native"
    assert (
        json.dumps({"runtime": Runtime.URL, "platform": Platform.GPU_NATIVE_EAGER})
        == '{"runtime": "url", "platform": "gpu-native-eager"}'
    )


def test_unknown_names_are_refused_in_the_words_users_had():
    with pytest.raises(UserError, match=r"^--runtime must be one of native, url, got 'ssh'$"):
        Options(method="ngram", run_id="r", runtime="ssh")
    with pytest.raises(UserError) as refused:
        Options(method="ngram", run_id="r", platform="tpu")
    with pytest.raises(methods.MethodError) as serve_args_refusal:  # what `--platform tpu` said before the enum
        methods.build("baseline", platform="tpu")
    assert str(refused.value) == str(serve_args_refusal.value)


def test_options_hold_members_and_write_the_same_json(tmp_path):
    opts = Options(
        method="ngram", run_id="r", results_dir=tmp_path, runtime="url", url="http://h:1", platform="cpu-native"
    )
    assert type(opts.runtime) is Runtime and type(opts.platform) is Platform
    data = json.loads(json.dumps(opts.to_json()))
    assert (data["runtime"], data["platform"]) == ("url", "cpu-native")
    back = Options.from_json(data)
    assert back == opts and back.runtime is Runtime.URL and back.platform is Platform.CPU_NATIVE
    assert Options(method="ngram", run_id="r").to_json()["platform"] == "gpu-native"


def test_the_command_line_takes_the_same_strings():
    parser = argparse.ArgumentParser()
    run.register(parser.add_subparsers())
    args = parser.parse_args(
        ["run", "--method", "ngram", "--runtime", "url", "--url", "http://h:1", "--platform", "cpu-container"]
    )
    opts = options_from_args(args, "ngram")
    assert (opts.runtime, opts.platform) == (Runtime.URL, Platform.CPU_CONTAINER)
    assert "{native,url}" in parser._subparsers._group_actions[0].choices["run"].format_help()
    with pytest.raises(SystemExit):
        parser.parse_args(["run", "--method", "ngram", "--runtime", "URL"])
    assert options_from_args(parser.parse_args(["run", "--method", "ngram"]), "ngram").runtime is Runtime.NATIVE


def test_a_recorded_plan_keeps_the_platform_string(tmp_path):
    """The plan's platform (from serve_args.build) is written into the summary as the string it always was."""
    plan = methods.build("baseline", model_set_name="tiny", platform=Platform.CPU_NATIVE, models_dir=str(tmp_path))
    assert json.loads(json.dumps({"platform": plan.platform})) == {"platform": "cpu-native"}
