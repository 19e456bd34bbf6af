"""The GPU form's build policy, on the real engine and the real compose CLI: compose.yaml's collector service
(built FROM the vLLM image of the lock; here the CPU vLLM image stands in for vllm/vllm-openai, which this
machine cannot pull) is built by one explicit `compose build` (make's step), and `compose run` then starts it
without building. With the `pull_policy: build` compose.yaml had before, the same `compose run` rebuilt it each
time. A build shows on the engine as BuildKit cache records created or used (Compose builds with BuildKit here;
it emits no image event) or, with the classic builder, as an image `tag` event; both are read around each
step, and the control shows the check sees a build when there is one."""

from __future__ import annotations

import os
import subprocess

import pytest

from . import engine
from .conftest import tail
from .stack import Stack

pytestmark = pytest.mark.compose


def _compose(stack: Stack, project: str, override: str, *args: str, vllm_image: str) -> subprocess.CompletedProcess:
    """docker compose -f compose.yaml -f OVERRIDE --env-file images.lock ARGS, as the invoking user, with the
    variables make sets (VLLM_IMAGE from the shell wins over the env file, as images.env.local does)."""
    env = {
        **stack.env(COMPOSE_PROJECT_NAME=project),
        "VLLM_IMAGE": vllm_image,
        "SPECSTACK_UID": str(stack.user.pw_uid),
        "SPECSTACK_GID": str(stack.user.pw_gid),
    }
    argv = [
        "env",
        "-i",
        *[f"{k}={v}" for k, v in env.items()],
        engine.DOCKER,
        "compose",
        "-f",
        "compose.yaml",
        "-f",
        override,
        "--env-file",
        "images.lock",
        *args,
    ]
    if os.getuid() == 0:
        argv = ["runuser", "-u", stack.user.pw_name, "--", *argv]
    return subprocess.run(
        argv, cwd=stack.dir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=1800
    )


@pytest.fixture(scope="module")
def builds(stack, cpu_images):
    project = stack.project + "-builds"
    image = f"specstack-buildtest-collector:{project}"
    vllm_image = cpu_images["refs"]["VLLM_IMAGE"]
    # The folders and the secret compose.yaml mounts, made by the invoking user as make does before any compose
    # call (left to the engine, ./results would be created by root and no later make run could write into it).
    prepared, _ = stack.make("compose-prepare", "PLATFORM=cpu", log="builds-prepare")
    assert prepared.returncode == 0, tail(prepared.stdout)
    files = {}
    for name, policy in (("never", ""), ("build", "    pull_policy: build\n")):
        path = stack.dir / f"builds-{name}.yaml"
        # Only the tag differs from compose.yaml (so no real image is replaced), plus, for the control, the old
        # pull_policy.
        path.write_text(f"services:\n  collector:\n    image: {image}\n{policy}")
        os.chown(path, stack.user.pw_uid, stack.user.pw_gid)
        files[name] = path.name
    out = {}
    try:
        cache = engine.build_cache()
        with engine.ImageEvents() as events:
            out["build"] = _compose(stack, project, files["never"], "build", "collector", vllm_image=vllm_image)
        out["build_events"], out["build_cache"] = events.actions(), (cache, engine.build_cache())
        out["id_built"] = engine.inspect(image, kind="image")[0]["Id"]
        for attempt in ("run", "run_again"):
            cache = engine.build_cache()
            with engine.ImageEvents() as events:
                out[attempt] = _compose(
                    stack, project, files["never"], "run", "--rm", "collector", "--help", vllm_image=vllm_image
                )
            out[f"{attempt}_events"], out[f"{attempt}_cache"] = events.actions(), (cache, engine.build_cache())
        out["id_after_runs"] = engine.inspect(image, kind="image")[0]["Id"]
        cache = engine.build_cache()
        with engine.ImageEvents() as events:
            out["old_policy_run"] = _compose(
                stack, project, files["build"], "run", "--rm", "collector", "--help", vllm_image=vllm_image
            )
        out["old_policy_events"], out["old_policy_cache"] = events.actions(), (cache, engine.build_cache())
        out["image"] = image
        yield out
    finally:
        _compose(stack, project, files["never"], "down", "--remove-orphans", vllm_image=vllm_image)
        engine.docker("image", "rm", "-f", image, check=False)


def built(builds: dict, step: str) -> bool:
    """Did the engine build during that step: BuildKit cache records created or used, or an image tagged."""
    before, after = builds[f"{step}_cache"]
    return before != after or any(a[0] == "tag" and a[1] == builds["image"] for a in builds[f"{step}_events"])


def test_make_s_explicit_build_builds_the_image(builds):
    assert builds["build"].returncode == 0, tail(builds["build"].stdout)
    assert built(builds, "build") and "Built" in builds["build"].stdout


@pytest.mark.parametrize("attempt", ["run", "run_again"])
def test_compose_run_starts_the_built_image_without_building(builds, attempt):
    out = builds[attempt]
    assert out.returncode == 0, tail(out.stdout)
    assert "usage: specstack" in out.stdout
    assert not built(builds, attempt)
    assert "configured to build" not in out.stdout and "Built" not in out.stdout and "naming to" not in out.stdout
    assert [a for a in builds[f"{attempt}_events"] if a[0] in ("pull", "load", "import")] == []
    assert builds["id_after_runs"] == builds["id_built"]


def test_the_old_pull_policy_build_rebuilt_on_every_run(builds):
    """The control: the same `compose run` under `pull_policy: build` builds (the engine tags the image again),
    which is what a sweep paid once per method and for the report."""
    out = builds["old_policy_run"]
    assert out.returncode == 0, tail(out.stdout)
    # compose says it too: it goes to build (here without buildx, hence its warning)
    assert built(builds, "old_policy") and "configured to build using Bake" in out.stdout


def test_the_folders_compose_mounts_belong_to_the_invoking_user(stack, builds):
    """A compose call with a missing bind-mount source makes the engine create it as root; make's
    compose-prepare creates them first, so later make runs (as that user) can write their results."""
    for rel in ("results", ".specstack/prometheus-targets"):
        assert (stack.dir / rel).stat().st_uid == stack.user.pw_uid, rel
