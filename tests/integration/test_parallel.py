"""A native parallel sweep on real vLLM (CPU, tiny models): `specstack sweep --cpusets A,B --calibrate` with
baseline and ngram runs the baseline on each slot (`baseline`, `baseline-slot1`) and ngram on a free one, two
servers at once, ngram compared with the baseline of its own slot; every server is pinned to its slot's core
(read from the running processes), every result is exact, the manifest and host records name each slot, and the
report places each method. (SIGTERM to the sweep alone reaching every slot's run: tests/pipeline/test_parallel.py;
a run's own cleanup on SIGTERM, server stopped and method kept as failed: test_interrupt.py.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from specstack.pipeline.slots import calibration_name
from specstack.results import layout
from tests.support import is_vllm_serve

pytestmark = pytest.mark.integration

SPECSTACK = Path(sys.executable).with_name("specstack")
SMALL = [
    "--model-set",
    "tiny",
    "--platform",
    "cpu-native",
    "--tasks",
    "code",
    "--num-prompts",
    "4",
    "--concurrency",
    "1",
    "--warmup-requests",
    "1",
    "--acceptance-max-tokens",
    "32",
    "--perf-output-len",
    "32",
]


def two_cores() -> list[str]:
    cores = sorted(os.sched_getaffinity(0))
    assert len(cores) >= 2, f"a parallel sweep of two CPU slots needs two cores; this process may use {cores}"
    return [str(c) for c in cores[:2]]


class Servers:
    """Every `vllm serve` below the sweep, sampled while it runs: when it was seen and the cores it may use. A
    child vLLM forks (same command line until it execs or exits) is part of its parent's server, not a fourth
    one: the CI run of 0f774a5 saw one for a single 0.2 s sample."""

    def __init__(self, root: int):
        self.root, self.seen, self.stop = root, {}, threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.thread.start()

    def _watch(self) -> None:
        while not self.stop.is_set():
            try:
                children = psutil.Process(self.root).children(recursive=True)
            except psutil.NoSuchProcess:
                return
            now = time.monotonic()
            for p in children:
                try:
                    # a process vLLM forks keeps its parent's command line for a moment: not another server
                    parent = p.parent()
                    if is_vllm_serve(p.cmdline()) and not (parent and is_vllm_serve(parent.cmdline())):
                        first, _, _ = self.seen.get(p.pid, (now, now, None))
                        self.seen[p.pid] = (first, now, tuple(sorted(p.cpu_affinity())))
                except psutil.Error:
                    continue
            time.sleep(0.2)

    def close(self) -> dict:
        self.stop.set()
        self.thread.join()
        return self.seen


@pytest.fixture(scope="module")
def parallel_run(models_dir, tmp_path_factory):
    cores, results = two_cores(), tmp_path_factory.mktemp("results")
    proc = subprocess.Popen(
        [
            SPECSTACK,
            "sweep",
            "--methods",
            "baseline,ngram",
            "--cpusets",
            ",".join(cores),
            "--calibrate",
            "--run-id",
            "par",
            "--results",
            results,
            "--models-dir",
            models_dir,
            *SMALL,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    servers = Servers(proc.pid)
    out, err = proc.communicate(timeout=1500)
    return {
        "code": proc.returncode,
        "out": out,
        "err": err,
        "cores": cores,
        "servers": servers.close(),
        "run_dir": results / "par",
    }


def test_every_result_is_exact_and_the_run_is_marked_parallel(parallel_run):
    assert parallel_run["code"] == 0, parallel_run["out"][-3000:] + parallel_run["err"][-3000:]
    assert json.loads(parallel_run["out"].strip().splitlines()[-1]) == {"run_id": "par", "failed": []}
    run_dir, cores = parallel_run["run_dir"], parallel_run["cores"]
    manifest = json.loads((run_dir / layout.MANIFEST).read_text())
    assert manifest["mode"] == "parallel" and manifest["calibration"] is True
    assert manifest["slots"] == [{"cpuset": c} for c in cores]
    assert sorted(manifest["methods"]) == ["baseline", "baseline-slot1", "ngram"]
    for name in manifest["methods"]:
        summary = json.loads((run_dir / name / layout.SUMMARY_FILE).read_text())
        assert summary["status"] == "ok" and summary["crosscheck"]["ok"], (name, summary["error"])
    assert (run_dir / layout.REPORT_MD).exists() and (run_dir / layout.SUMS).exists()


def test_each_method_ran_on_its_slot_and_is_compared_with_that_slots_baseline(parallel_run):
    run_dir, cores = parallel_run["run_dir"], parallel_run["cores"]
    manifest = json.loads((run_dir / layout.MANIFEST).read_text())
    slots = {name: entry["slot"] for name, entry in manifest["methods"].items()}
    assert slots["baseline"] == {"cpuset": cores[0], "asked": cores[0]}
    assert slots["baseline-slot1"] == {"cpuset": cores[1], "asked": cores[1]}
    index = cores.index(slots["ngram"]["asked"])
    ngram = json.loads((run_dir / "ngram" / layout.SUMMARY_FILE).read_text())
    assert ngram["baseline_method"] == calibration_name("baseline", index)
    assert ngram["provenance"]["host"]["slot"] == slots["ngram"]  # the host record the slot's process wrote
    report = (run_dir / layout.REPORT_MD).read_text()
    assert "baseline-slot1" in report and f"cpuset {cores[1]}" in report


def test_the_servers_ran_side_by_side_each_on_its_own_core(parallel_run):
    """Three servers, each pinned to one of the two cores; the first two up at the same time, on different
    cores."""
    seen = parallel_run["servers"]
    wanted = {(int(c),) for c in parallel_run["cores"]}
    assert len(seen) == 3 and {cores for _, _, cores in seen.values()} == wanted, seen
    spans = sorted((first, last, cores) for first, last, cores in seen.values())
    (_, a1, a_cores), (b0, _, b_cores) = spans[0], spans[1]
    assert b0 < a1 and a_cores != b_cores, spans
