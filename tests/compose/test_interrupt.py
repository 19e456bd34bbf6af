"""`make run` interrupted leaves no container behind: SIGTERM to make's process group (what `timeout` and a
scheduler send; Ctrl+C sends SIGINT the same way) while the method's server is still loading, the moment the
H200 run's harness was killed. make's trap stops the loading server at once (killed: vLLM 0.32.0 mid-start
ignores SIGTERM), then does what `make down` does: no container or network of the project is left, its named
volumes stay, and make exits on the signal."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

from . import engine
from .conftest import tail
from .stack import RUN_ARGS

pytestmark = pytest.mark.compose


def server_container(stack, service: str) -> list[str]:
    """The service's own running container (not a one-off `compose run` of its image: fetch, pre-flight)."""
    return engine.docker(
        "ps",
        "-q",
        "--filter",
        f"label=com.docker.compose.project={stack.project}",
        "--filter",
        f"label=com.docker.compose.service={service}",
        "--filter",
        "label=com.docker.compose.oneoff=False",
    ).stdout.split()


@pytest.fixture(scope="module")
def interrupted(stack, rerun):
    """After the rerun (images built, models in their volume): make run until the server container runs, then
    SIGTERM to make's whole process group."""
    proc = subprocess.Popen(
        stack.argv(
            "run", "METHOD=ngram", "PLATFORM=cpu", "MODEL_SET=tiny", "RUN_ID=cpu-interrupt", f"RUN_ARGS={RUN_ARGS}"
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 600
        while not server_container(stack, "vllm-ngram"):
            assert proc.poll() is None, f"make ended before the server started:\n{tail(proc.stdout.read())}"
            assert time.monotonic() < deadline, "the server container never ran"
            time.sleep(0.2)
        os.killpg(proc.pid, signal.SIGTERM)
        t0 = time.monotonic()
        out, _ = proc.communicate(timeout=180)
        seconds = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    (stack.logs / "run-interrupted.log").write_text(out)
    return {
        "rc": proc.returncode,
        "out": out,
        "seconds": seconds,
        "left": {kind: engine.project_ids(stack.project, kind) for kind in ("container", "network", "volume")},
    }


def test_an_interrupted_make_run_leaves_no_container_or_network(interrupted):
    out = interrupted["out"]
    assert interrupted["rc"] in (128 + signal.SIGTERM, -signal.SIGTERM), (interrupted["rc"], tail(out))
    assert "interrupted (SIGTERM): every container of the stack stopped and removed (make down)" in out, tail(out)
    assert interrupted["left"]["container"] == [] and interrupted["left"]["network"] == [], interrupted["left"]
    assert len(interrupted["left"]["volume"]) == 4  # models, hf-cache, vllm-cache, prometheus-data: kept
    # the loading server is killed, not left its 60 s grace period
    assert interrupted["seconds"] < 45, f"make took {interrupted['seconds']:.0f} s to stop"
