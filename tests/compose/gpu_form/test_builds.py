"""Builds of the GPU form: once per make run / sweep, explicitly; never by up or run."""

from __future__ import annotations

import pytest

from .render import COMPOSE
from .stand_in import compose_verbs, pulls_or_builds, run_make

pytestmark = pytest.mark.compose


def test_built_images_are_never_pulled_nor_rebuilt_by_up_or_run(resolved):
    built = {name: svc for name, svc in resolved["services"].items() if "build" in svc}
    assert set(built) == {"collector", "vllm-suffix", "vllm-suffix-default"}
    assert all(svc["pull_policy"] == "never" for svc in built.values())
    assert "pull_policy: build" not in COMPOSE.read_text()


@pytest.mark.parametrize(
    "methods,services",
    [
        ("baseline ngram", ["collector"]),
        ("baseline suffix-default", ["collector", "vllm-suffix"]),
        ("baseline ngram draft_model eagle3 suffix", ["collector", "vllm-suffix"]),
    ],
)
def test_make_sweep_builds_once_what_its_methods_need_and_up_never_builds(fake_stack, methods, services):
    run_make(fake_stack, "sweep", "RUN_ID=b1", "GPU_FREE_POLL=0.05", f"SWEEP_METHODS={methods}", "SWEEP_MTP_METHODS=")
    verbs = compose_verbs(fake_stack)
    builds = [call for verb, call in verbs if verb == "build"]
    assert len(builds) == 1 and builds[0][builds[0].index("build") + 1 :] == services, builds
    # the build comes before anything starts; every up says --no-build
    assert verbs[0][0] == "build"
    ups = [call for verb, call in verbs if verb == "up"]
    assert len(ups) == 1 + len(methods.split()) and all("--no-build" in call for call in ups), ups


def test_make_run_builds_once_before_anything_starts(fake_stack):
    run_make(fake_stack, "run", "METHOD=ngram", "RUN_ID=b2")
    verbs = compose_verbs(fake_stack)
    assert [v for v, _ in verbs].count("build") == 1 and verbs[0][0] == "build"
    assert verbs[0][1][verbs[0][1].index("build") + 1 :] == ["collector"]
    assert all("--no-build" in call for verb, call in verbs if verb == "up")


def test_an_old_buildx_is_refused_before_anything_is_built_or_pulled(fake_stack):
    fake_stack["env"]["FAKE_BUILDX"] = "github.com/docker/buildx v0.16.2 f4e3e47"
    out = run_make(fake_stack, "run", "METHOD=suffix", "RUN_ID=b3", check=False)
    assert out.returncode != 0
    assert "host check: docker buildx 0.16.2 is older than 0.17" in out.stderr, out.stderr
    assert "DOCKER_BUILDKIT=0 make" in out.stderr
    assert pulls_or_builds(fake_stack) == []


@pytest.mark.parametrize(
    "extra",
    [
        {"FAKE_BUILDX": "github.com/docker/buildx v0.17.1 257815a"},
        {"FAKE_BUILDX": "github.com/docker/buildx v0.16.2 f4e3e47", "DOCKER_BUILDKIT": "0"},
        {},
    ],
)
def test_new_or_no_buildx_or_the_classic_builder_build(fake_stack, extra):
    fake_stack["env"].update(extra)
    out = run_make(fake_stack, "run", "METHOD=suffix", "RUN_ID=b4")
    assert "host check" not in out.stderr
    assert [v for v, _ in compose_verbs(fake_stack)].count("build") == 1
