"""collector/specstack/host/engine.py: how the host reaches Docker."""

from __future__ import annotations

import pytest

from specstack.host import HostError, engine

pytestmark = pytest.mark.unit


def test_docker_cli_missing_is_a_clear_error(tmp_path):
    cli = engine.DockerCLI(str(tmp_path / "no-docker-here"))
    with pytest.raises(HostError, match="not found"):
        cli.project_containers("specstack")
