"""`make down` removes every container and network of the project and keeps its named volumes; a second
`make run` (the committed images.cpu.lock: the command a fresh clone runs) reuses them."""

from __future__ import annotations

import json

import pytest

from .conftest import tail

pytestmark = pytest.mark.compose


def test_make_down_leaves_no_container_or_network(rerun):
    assert rerun["down"].returncode == 0, tail(rerun["down"].stdout)
    assert rerun["left"]["container"] == [] and rerun["left"]["network"] == []
    assert len(rerun["left"]["volume"]) == 4  # models, hf-cache, vllm-cache, prometheus-data


def test_second_run_after_down_reuses_the_named_volumes(rerun):
    out = rerun["make"]
    assert out.returncode == 0, tail(out.stdout)
    for name, before in rerun["volumes_before"].items():
        after = rerun["volumes_after"][name]
        assert (after["CreatedAt"], after["Mountpoint"]) == (before["CreatedAt"], before["Mountpoint"]), name
    # The tiny models were found, not rebuilt: their one-off container printed the stamped folders and the
    # engine created no volume during the second run.
    created = [e for e in rerun["events"].events if e.get("Type") == "volume" and e.get("Action") == "create"]
    assert created == []
    assert "/models/tiny-qwen3" in out.stdout
    # Prometheus kept the first run's series across down/up (its data volume came back).
    series = rerun["first_run_series"]
    assert series and all(s["metric"]["run_id"] == "cpu-run" for s in series)
    summary = json.loads((rerun["run_dir"] / "baseline" / "summary.json").read_text())
    assert summary["status"] == "ok" and summary["crosscheck"]["ok"]
    # The committed lock's local tags: what a fresh clone runs after `make images PLATFORM=cpu`.
    refs = {c["Config"]["Image"] for c in rerun["events"].started.values()}
    assert refs == {
        "specstack-vllm-cpu:0.32.0",
        "specstack-collector:0.1.0-vllm-cpu-0.32.0",
        "specstack-prometheus:2.42.0-deb12u1",
    }


def test_second_run_builds_and_pulls_no_image(rerun):
    """A second make run starts the images it has: the engine saw no image built (no image tagged by the classic
    builder, no BuildKit cache record created or used), pulled or loaded while it ran, the images are the same
    ones, and compose printed no build."""
    out = rerun["make"]
    assert out.returncode == 0, tail(out.stdout)
    assert [a for a in rerun["image_events"] if a[0] in ("tag", "pull", "load", "import", "build", "push")] == []
    before, after = rerun["build_cache"]
    assert before == after
    before, after = rerun["image_ids"]
    assert before == after
    assert "images missing on this engine" not in out.stdout
    assert not any(
        line.lstrip().startswith(("Building", "[+] Building", "#1 ")) or " Built" in line
        for line in out.stdout.splitlines()
    ), tail(out.stdout)
