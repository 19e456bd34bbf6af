"""collector/specstack/host/server_log.py: only this start's lines of the method's server container are kept."""
from __future__ import annotations

import pytest

from specstack.host import HostError
from specstack.host.server_log import save_server_log

pytestmark = pytest.mark.unit


class Client:
    """What save_server_log asks of Docker: the service's container and its log since a time."""

    def __init__(self, container: dict | None):
        self.container = container
        self.asked: list[tuple] = []

    def service_container(self, project: str, service: str) -> dict | None:
        self.asked.append(("container", project, service))
        return self.container

    def logs(self, container: str, since: str) -> str:
        self.asked.append(("logs", container, since))
        return "INFO this start\n"


def test_the_log_since_the_container_started_goes_into_the_bundle(tmp_path):
    started = "2025-01-02T03:04:05.123456789Z"
    client = Client({"Id": "c1", "State": {"StartedAt": started}})
    path = save_server_log(client, run_id="r1", method="ngram", results=tmp_path, project="p")
    assert path == tmp_path / "r1" / "host-provenance" / "ngram.server.log"
    assert path.read_text() == "INFO this start\n"
    assert client.asked == [("container", "p", "vllm-ngram"), ("logs", "c1", started)]


@pytest.mark.parametrize("container,message", [
    (None, "no container of service vllm-ngram in compose project 'p'"),
    ({"Id": "c1", "State": {"StartedAt": "0001-01-01T00:00:00Z"}}, "vllm-ngram never started"),
])
def test_no_log_without_a_started_server(tmp_path, container, message):
    with pytest.raises(HostError, match=message):
        save_server_log(Client(container), run_id="r1", method="ngram", results=tmp_path, project="p")
    assert not (tmp_path / "r1").exists()
