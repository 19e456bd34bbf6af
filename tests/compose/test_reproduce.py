"""`make reproduce RUN=results/cpu-run` as a receiving team runs it: the compose run made from registry-pinned
images (the `locked_run` fixture: `make lock` against the loopback registry, then `make run METHOD=ngram`) is
re-run from its bundle alone. The engine first loses every reference to the registry's images, so each one is
pulled by the digest the run recorded; the reproduction's servers run from those references, and its compare
with the original finds every exact-by-design figure identical."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from specstack.host.image_ref import parse_reference

from . import engine
from .conftest import CPU_KEYS, tail
from .test_run import all_containers, server, summary

pytestmark = pytest.mark.compose

REPRO = "cpu-run-again"


@pytest.fixture(scope="module")
def reproduced(stack, locked, locked_run, registry):
    _drop_registry_references(registry)
    with engine.Events(stack.project) as events, engine.ImageEvents() as images:
        # speed on a shared 2-core host is judged in docs/reproduce.md's measurement; this test is about what
        # must be identical (as tests/integration/test_reproduce.py)
        out, seconds = stack.make(
            "reproduce",
            "RUN=results/cpu-run",
            f"REPRO_ID={REPRO}",
            "SPEED_TOLERANCE=1000%",
            log="reproduce",
            timeout=1200,
        )
    # The later compose tests (test_run) inspect the registry's tags: the pulls brought the digests back, the
    # tags are put back too.
    for ref in locked["pushed"].values():
        engine.docker("tag", next(r for r in locked["refs"].values() if r.startswith(ref + "@")), ref, check=False)
    return {
        "make": out,
        "seconds": seconds,
        "events": events,
        "image_events": images.actions(),
        "run_dir": stack.results / REPRO,
        "original": stack.results / "cpu-run",
        "compare": stack.results / f"compare-cpu-run-vs-{REPRO}",
    }


def test_the_original_records_each_image_by_its_registry_digest(locked, locked_run):
    images = json.loads((locked_run["run_dir"] / "host-provenance" / "ngram.json").read_text())["images"]
    for key in CPU_KEYS:
        assert images[key]["ref"] == locked["refs"][key] and "@sha256:" in images[key]["ref"]
        assert images[key]["id"].startswith("sha256:")


def test_each_image_is_pulled_by_its_recorded_digest_and_the_servers_run_from_it(reproduced, locked):
    out = reproduced["make"]
    assert out.returncode == 0, tail(out.stdout)
    # the engine names a pull by its repository; the digest it asked for is in make's output
    pulled = {name for action, name in reproduced["image_events"] if action == "pull"}
    for key in CPU_KEYS:
        ref = locked["refs"][key]
        assert parse_reference(ref)["name"] in pulled, (key, pulled)
        assert ref.split("@")[1] in out.stdout, key
    assert server(reproduced, "vllm-ngram")["Config"]["Image"] == locked["refs"]["VLLM_IMAGE"]
    collectors = [c for c in all_containers(reproduced).values() if engine.service_of(c) == "collector"]
    assert collectors and {c["Config"]["Image"] for c in collectors} == {locked["refs"]["COLLECTOR_IMAGE"]}
    # what the engine ran is what the original recorded: the same image ids, method by method
    for run in (reproduced["original"], reproduced["run_dir"]):
        assert (run / "host-provenance" / "ngram.json").exists()
    before, after = (
        json.loads((run / "host-provenance" / "ngram.json").read_text())["images"]
        for run in (reproduced["original"], reproduced["run_dir"])
    )
    assert {k: v.get("id") for k, v in before.items()} == {k: v.get("id") for k, v in after.items()}


def test_the_reproduction_measures_the_recorded_workload_and_its_exact_figures_are_identical(reproduced):
    out = reproduced["make"]
    assert out.returncode == 0, tail(out.stdout)
    again, original = summary(reproduced["run_dir"], "ngram"), summary(reproduced["original"], "ngram")
    assert again["status"] == "ok" and again["crosscheck"]["ok"]
    manifest = json.loads((reproduced["run_dir"] / "manifest.json").read_text())
    assert manifest["reproduction_of"]["folder"] == "cpu-run" and manifest["reproduction_of"]["drift"] == []
    assert manifest["inputs"] == json.loads((reproduced["original"] / "manifest.json").read_text())["inputs"]
    for key in ("num_spec_steps", "num_draft_tokens", "num_accepted_draft_tokens", "histogram"):
        assert again["tasks"]["code"][key] == original["tasks"]["code"][key], key
    verdict = json.loads((reproduced["compare"] / "reproduce.json").read_text())
    assert verdict["exact_ok"] and verdict["failed"] == [], tail(out.stdout)
    assert {"ngram code acceptance_length", "ngram code greedy outputs", "ngram code c=1 bench_acceptance_length"} <= {
        r["figure"] for r in verdict["exact"]
    }
    assert all(r["ok"] for r in verdict["exact"])
    assert (reproduced["run_dir"] / "report.md").exists()


def _drop_registry_references(registry) -> None:
    """What the receiving engine does not have: any tag or digest reference of the registry's images."""
    held = [
        t
        for t in engine.docker(
            "image", "ls", "--digests", "--format", "{{.Repository}}:{{.Tag}} {{.Repository}}@{{.Digest}}"
        ).stdout.split()
        if t.startswith(registry.address + "/") and not t.endswith("<none>")
    ]
    if held:
        engine.docker("image", "rm", *held, check=False)


def test_an_unreachable_registry_is_named_before_anything_runs(stack, reproduced, registry):
    """The same bundle, its images recorded on a registry nobody answers on (a closed port): the engine's own
    references stay as they are for the tests after this one."""
    import shutil

    from tests.support import free_port

    moved = stack.results / "cpu-run-elsewhere"
    shutil.copytree(stack.results / "cpu-run", moved)
    gone = f"127.0.0.1:{free_port()}"
    for rec in (moved / "host-provenance").glob("*.json"):
        rec.write_text(rec.read_text().replace(registry.address, gone))
    if os.getuid() == 0:
        subprocess.run(["chown", "-R", f"{stack.user.pw_uid}:{stack.user.pw_gid}", str(moved)], check=True)
    out, _ = stack.make(
        "reproduce", "RUN=results/cpu-run-elsewhere", "REPRO_ID=cpu-run-unreachable", log="reproduce-unreachable"
    )
    assert out.returncode == 2, tail(out.stdout)
    assert f"cannot pull {gone}/specstack-vllm-cpu:0.32.0@sha256:" in out.stdout, tail(out.stdout)
    assert "the registry that held it at run time must be reachable" in out.stdout
    assert not (stack.results / "cpu-run-unreachable").exists()
