"""collector/specstack/host/knobs.py: make's knobs refused before anything starts, each with the fix; through the
real make, a refused knob runs no docker command and makes no folder."""

from __future__ import annotations

import ast
import os
import subprocess

import pytest

from specstack.config import methods
from specstack.host import knobs
from specstack.host.stack import METHODS_TOML, MethodsToml, Settings

from .test_cli import REPO

pytestmark = pytest.mark.unit


def _settings(**values) -> Settings:
    return Settings(methods=MethodsToml.read(REPO / METHODS_TOML), **values)


def test_the_model_sets_read_without_tomllib_are_the_package_s():
    assert MethodsToml.read(REPO / METHODS_TOML).model_sets == list(methods.load()["model_sets"])


def test_the_defaults_and_good_values_pass():
    assert knobs.problems(_settings(), ["baseline", "ngram", "eagle3"]) == []
    assert (
        knobs.problems(
            _settings(
                model_set="tiny", k="3", calibrate="1", gpu_free_mib="512", gpu_free_timeout="60", gpu_free_poll="0.5"
            ),
            ["mtp"],
        )
        == []
    )


@pytest.mark.parametrize(
    "values, said",
    [
        ({"model_set": "Tiny"}, "unknown MODEL_SET 'Tiny'; choose one of: default tiny smollm2"),
        ({"k": "abc"}, "K must be a whole number of draft tokens (> 0), not 'abc'"),
        ({"k": "0"}, "K must be a whole number of draft tokens (> 0), not '0'"),
        ({"calibrate": "yes"}, "CALIBRATE must be 1"),
        ({"gpu_free_mib": "1G"}, "GPU_FREE_MIB must be a whole number of MiB, not '1G'"),
        ({"gpu_free_timeout": "5m"}, "GPU_FREE_TIMEOUT must be a number of seconds, not '5m'"),
        ({"gpu_free_poll": ""}, "GPU_FREE_POLL must be a number of seconds, not ''"),
    ],
)
def test_a_bad_knob_is_one_line_naming_the_fix(values, said):
    found = knobs.problems(_settings(**values), ["ngram"])
    assert len(found) == 1 and found[0].startswith(said)


def test_a_method_the_model_set_cannot_serve_names_the_sets_that_can():
    found = knobs.problems(_settings(model_set="smollm2"), ["baseline", "eagle3", "mtp"])
    assert found == [
        "MODEL_SET=smollm2: model set 'smollm2' has no 'eagle3' model, which method 'eagle3' needs; the model sets "
        "that have one: default, tiny (MODEL_SET, or leave the method out)",
        "MODEL_SET=smollm2: model set 'smollm2' has no 'mtp_target' model, which method 'mtp' needs; the model sets "
        "that have one: default, tiny (MODEL_SET, or leave the method out)",
    ]


def test_an_unknown_method_is_named():
    assert knobs.problems(_settings(), ["ngram", "medusa"]) == [
        f"unknown method 'medusa' (METHOD or SWEEP_METHODS); choose from: {' '.join(methods.names())}"
    ]


def test_what_it_runs_is_python_3_8():
    ast.parse((REPO / "collector/specstack/host/knobs.py").read_text(), feature_version=(3, 8))


@pytest.mark.parametrize(
    "goal, knob, said",
    [
        (["run", "METHOD=ngram"], "MODEL_SET=nope", "unknown MODEL_SET 'nope'"),
        (["run", "METHOD=eagle3"], "MODEL_SET=smollm2", "has no 'eagle3' model"),
        (["sweep", "PLATFORM=cpu"], "K=four", "K must be a whole number"),
        (["sweep", "PLATFORM=cpu", "SWEEP_METHODS=baseline medusa"], "RUN_ID=x", "unknown method 'medusa'"),
    ],
)
def test_make_refuses_before_any_docker_command_or_folder(tmp_path, goal, knob, said):
    calls = tmp_path / "docker-calls"
    docker = tmp_path / "docker"
    docker.write_text(f'#!/bin/sh\necho "$@" >> {calls}\nexit 0\n')
    docker.chmod(0o755)
    work = tmp_path / "repo"  # a copy of what make reads, so the folders make would create are seen
    work.mkdir()
    for name in ("Makefile", "services", "collector", "images", "compose.yaml"):
        (work / name).symlink_to(REPO / name)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    proc = subprocess.run(
        ["make", "--no-print-directory", *goal, knob, f"DOCKER={docker}"],
        cwd=work,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert said in proc.stderr
    assert not calls.exists(), calls.read_text()
    assert sorted(p.name for p in work.iterdir()) == ["Makefile", "collector", "compose.yaml", "images", "services"]
