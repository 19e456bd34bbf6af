"""The manual `docker compose ... up` that docs/gpu.md documents, run as written by the invoking user on the
real engine (CPU form) with HF_TOKEN unset in the shell: it starts a healthy server; without its HF_TOKEN
prefix compose refuses, as the troubleshooting table says."""

from __future__ import annotations

import os
import subprocess

import pytest

from . import engine
from .conftest import tail
from .stack import REPO, Stack

pytestmark = pytest.mark.compose

PREFIX = 'HF_TOKEN="${HF_TOKEN:-}" '


def documented_command() -> str:
    text = (REPO / "docs" / "gpu.md").read_text()
    (line,) = [ln for ln in text.splitlines() if ln.startswith(PREFIX) and " up -d --wait " in ln]
    return line


def shell(stack: Stack, command: str) -> subprocess.CompletedProcess:
    """bash -c COMMAND in the stack's copy, as the invoking user, HF_TOKEN absent from the environment."""
    env = {k: v for k, v in stack.env().items() if k != "HF_TOKEN"}
    argv = ["env", "-i", *[f"{k}={v}" for k, v in env.items()], "bash", "-c", f"cd {stack.dir} && {command}"]
    if os.getuid() == 0:
        argv = ["runuser", "-u", stack.user.pw_name, "--", *argv]
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)


@pytest.fixture(scope="module")
def manual(stack, sweep_run):
    """After the sweep (folders, secret and tiny models prepared by make): without the prefix, then as written."""
    command = documented_command()
    refused = shell(stack, command.removeprefix(PREFIX))
    up = shell(stack, command)
    (stack.logs / "manual-up.log").write_text(refused.stdout + "\n---\n" + up.stdout)
    ids = engine.docker(
        "ps",
        "-q",
        "--filter",
        f"label=com.docker.compose.project={stack.project}",
        "--filter",
        "label=com.docker.compose.service=vllm-ngram",
    ).stdout.split()
    containers = engine.inspect(*ids) if ids else []
    stop = shell(stack, command.replace(" up -d --wait vllm-ngram prometheus", " stop vllm-ngram"))
    return {"refused": refused, "up": up, "containers": containers, "stop": stop}


def test_documented_manual_up_starts_a_healthy_server_without_hf_token(manual):
    up = manual["up"]
    assert up.returncode == 0, tail(up.stdout)
    (server,) = manual["containers"]
    assert server["State"]["Health"]["Status"] == "healthy"
    assert server["HostConfig"]["CpusetCpus"] == f"0-{os.cpu_count() - 1}"
    assert manual["stop"].returncode == 0, tail(manual["stop"].stdout)


def test_without_the_prefix_compose_names_the_unset_hf_token(manual):
    refused = manual["refused"]
    assert refused.returncode != 0
    assert 'environment variable "HF_TOKEN" required by secret' in refused.stdout, tail(refused.stdout)
