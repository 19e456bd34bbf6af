"""The event recorder the compose tests read (engine.Events), on the real engine: a container is recorded
even when it is removed before its start event is read, as a short-lived `compose run --rm` one-off can be
(2026-12-07: the model fetch of the sweep's first method went missing that way)."""

from __future__ import annotations

import os

import pytest

from . import engine

pytestmark = pytest.mark.compose


def test_a_container_gone_by_its_start_is_kept_as_inspected_at_create(cpu_images):
    image = cpu_images["refs"]["COLLECTOR_IMAGE"]
    project = f"specstack-events-{os.getpid()}"
    labels = ["--label", f"com.docker.compose.project={project}", "--label", "com.docker.compose.service=probe"]
    events = engine.Events(project)
    kept = engine.docker("create", *labels, image, "true").stdout.strip()
    lost = engine.docker("create", *labels, image, "true").stdout.strip()
    try:
        events._inspect({"id": kept, "status": "create"})
    finally:
        engine.docker("rm", kept, lost)
    events._inspect({"id": kept, "status": "start", "timeNano": 2})
    events._inspect({"id": lost, "status": "create"})
    events._inspect({"id": lost, "status": "start", "timeNano": 3})
    # the create record stands in for the start's, with the start event's time; one never seen alive is absent
    assert engine.service_of(events.started[kept]) == "probe" and events.started[kept]["Id"] == kept
    assert events.start_ns == {kept: 2, lost: 3} and lost not in events.started
