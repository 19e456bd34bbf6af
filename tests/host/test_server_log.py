"""collector/specstack/host/server_log.py: only this start's lines of the method's server container are kept."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from specstack.config import methods
from specstack.host import HostError
from specstack.host.server_log import NEVER, START_LINE, save_server_log, this_start

pytestmark = pytest.mark.unit


class Client:
    """What save_server_log asks of Docker: the service's container and its log since a time."""

    def __init__(self, container: dict | None, log: str = "INFO this start\n", since_log: str = "INFO since\n"):
        self.container, self.log, self.since_log = container, log, since_log
        self.asked: list[tuple] = []

    def service_container(self, project: str, service: str) -> dict | None:
        self.asked.append(("container", project, service))
        return self.container

    def logs(self, container: str, since: str) -> str:
        self.asked.append(("logs", container, since))
        return self.log if since == NEVER else self.since_log


RESTARTED = {
    "Id": "c1",
    "State": {"StartedAt": "2025-01-02T03:04:05.123456789Z", "FinishedAt": "2025-01-02T03:00:00.5Z"},
}


def test_a_restarted_container_keeps_the_lines_from_its_last_start_line_on(tmp_path):
    """Compose starts a stopped container again, old log and all: each start begins with serve_args's start line,
    so the log is cut at the last one, whatever times the engine stamped."""
    log = "vllm serve old --port 8000\nINFO old runner V2\nvllm serve new --port 8000\nINFO new runner V1\n"
    client = Client(RESTARTED, log=log)
    path = save_server_log(client, run_id="r1", method="ngram", results=tmp_path, project="p")
    assert path == tmp_path / "r1" / "host-provenance" / "ngram.server.log"
    assert path.read_text() == "vllm serve new --port 8000\nINFO new runner V1\n"
    assert client.asked == [("container", "p", "vllm-ngram"), ("logs", "c1", NEVER)]


def test_a_log_without_a_start_line_is_taken_since_the_previous_run_ended(tmp_path):
    """An entrypoint that prints no start line: the engine's times decide (FinishedAt of the previous run, not
    StartedAt, which the engine may record after it stamped the first line)."""
    client = Client(RESTARTED, log="INFO old\nINFO new\n")
    path = save_server_log(client, run_id="r1", method="ngram", results=tmp_path, project="p")
    assert path.read_text() == "INFO since\n"
    assert client.asked[-1] == ("logs", "c1", "2025-01-02T03:00:00.5Z")


def test_a_container_that_never_stopped_keeps_its_whole_log(tmp_path):
    client = Client(
        {"Id": "c1", "State": {"StartedAt": "2025-01-02T03:04:05Z", "FinishedAt": "0001-01-01T00:00:00Z"}},
        log="INFO first\nINFO second\n",
    )
    path = save_server_log(client, run_id="r1", method="ngram", results=tmp_path, project="p")
    assert path.read_text() == "INFO first\nINFO second\n"
    assert client.asked == [("container", "p", "vllm-ngram"), ("logs", "c1", NEVER)]


@pytest.mark.parametrize(
    "container,message",
    [
        (None, "no container of service vllm-ngram in compose project 'p'"),
        ({"Id": "c1", "State": {"StartedAt": "0001-01-01T00:00:00Z"}}, "vllm-ngram never started"),
    ],
)
def test_no_log_without_a_started_server(tmp_path, container, message):
    with pytest.raises(HostError, match=message):
        save_server_log(Client(container), run_id="r1", method="ngram", results=tmp_path, project="p")
    assert not (tmp_path / "r1").exists()


def test_serve_args_prints_the_start_line_the_cut_looks_for(tmp_path):
    """services/serve_args.py --exec: its first line is START_LINE and the server's arguments (then it execs)."""
    fake = tmp_path / "vllm"
    fake.write_text("#!/bin/sh\necho started\n")
    fake.chmod(0o755)
    out = subprocess.run(
        [
            sys.executable,
            str(methods.SERVICES_DIR / "serve_args.py"),
            "--method",
            "ngram",
            "--platform",
            "cpu-native",
            "--model-set",
            "tiny",
            "--exec",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"},
    )
    assert out.returncode == 0, out.stderr
    assert out.stderr.startswith(START_LINE) and out.stdout == "started\n"
    assert this_start(out.stderr + out.stdout) == out.stderr + out.stdout
