"""pipeline/parallel.py: a native parallel sweep's checks, each slot's options, and what a slot's process records
(the sweep itself, on real vLLM CPU slots: tests/integration/test_parallel.py)."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from specstack.errors import UserError
from specstack.pipeline import parallel
from specstack.results import layout
from specstack.runs.options import Options

pytestmark = pytest.mark.unit


def test_options_go_to_a_slots_process_and_come_back_equal():
    """Every field, none at its default: a field to_json does not carry back as it was fails here."""
    opts = Options(
        method="ngram",
        run_id="r",
        results_dir=Path("/tmp/res"),
        runtime="url",
        url="http://x",
        model_set="tiny",
        platform="cpu-native",
        models_dir="/m",
        port=9,
        served_model_name="s",
        tasks=("code", "mt"),
        workload_files={"code": (Path("/p.jsonl"), Path("/a.jsonl"))},
        datasets=("mt-bench",),
        num_prompts=3,
        perf_output_len=4,
        acceptance_max_tokens=5,
        concurrencies=(1, 4),
        request_rate=2.0,
        rates=(0.5, 1.0),
        rates_auto=True,
        burstiness=0.5,
        rates_max_concurrency=8,
        capacity_share=0.9,
        capacity_probes=2,
        capacity_resolution=0.1,
        slo={"ttft": 100.0},
        repeats=2,
        warmup_requests=1,
        acceptance_concurrency=2,
        temperatures=(0.6, 1.0),
        samples_per_prompt=4,
        turns=2,
        spec_override={"num_speculative_tokens": 2},
        prefix_caching=True,
        allow_mismatch=True,
        trust_server=True,
        force=True,
        ready_timeout=1.0,
        request_timeout=2.0,
        prometheus_targets=Path("/t/vllm.json"),
        windows_port=9400,
        skip_bench=True,
        quiet_gap=1.5,
        allow_synthetic=True,
        prometheus_url="http://p",
        prometheus_scrape_seconds=1.0,
        bundle_name="ngram-x",
        baseline_result="baseline-slot1",
        port_release_timeout=3.0,
        port_wait=4.0,
        replicate="sessions",
        session=1,
        sessions=2,
        slot="0-1",
    )
    defaults = Options(method="m", run_id="r")
    assert all(
        getattr(opts, f.name) != getattr(defaults, f.name)
        for f in dataclasses.fields(Options)
        if f.name not in ("method", "run_id")
    ), "give every field a value of its own"
    assert Options.from_json(json.loads(json.dumps(opts.to_json()))) == opts


@pytest.mark.parametrize(
    "fields, gpus, cpusets, message",
    [
        ({"runtime": "url", "url": "http://x"}, "", "0,1", "need the native runtime"),
        ({"platform": "gpu-native"}, "", "0,1", "give them with --gpus"),
        ({"platform": "cpu-native"}, "0,1", "", "give --cpusets"),
        ({"platform": "cpu-native", "turns": 2}, "", "0,1", "run those serially"),
        ({"platform": "cpu-native", "replicate": "sessions"}, "", "0,1", "run those serially"),
    ],
)
def test_what_a_parallel_sweep_cannot_do_is_said_before_anything_starts(tmp_path, fields, gpus, cpusets, message):
    opts = Options(method="baseline", run_id="r", results_dir=tmp_path, **fields)
    with pytest.raises(UserError, match=message):
        parallel.parallel_sweep(opts, ["baseline"], gpus=gpus, cpusets=cpusets)
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize(
    "cpusets, methods, message",
    [
        ("0,0", ["baseline"], "a slot appears twice"),
        ("0-1,1", ["baseline"], "overlap"),
        (f"{os.cpu_count()}", ["baseline"], "names core"),
        (
            "0",
            ["ngram"],
            "--calibrate runs each baseline on every slot, but the sweep's methods lack baseline: add it to --methods",
        ),
    ],
)
def test_bad_slots_are_named_with_the_sweeps_own_options(tmp_path, cpusets, methods, message):
    opts = Options(method="baseline", run_id="r", results_dir=tmp_path, platform="cpu-native")
    with pytest.raises(UserError, match=message.replace("-", "\\-")):
        parallel.parallel_sweep(opts, methods, cpusets=cpusets, calibrate=True)


def test_each_slot_has_its_port_target_file_windows_port_and_label():
    opts = Options(
        method="baseline",
        run_id="r",
        platform="gpu-native",
        prometheus_targets=Path("/t/vllm.json"),
        windows_port=9400,
        spec_override={"num_speculative_tokens": 2},
        port_release_timeout=30.0,
    )
    job = {
        "method": "ngram",
        "name": "ngram",
        "baseline": "baseline-slot1",
        "index": "1",
        "slot": "GPU-1",
        "cpuset": "",
    }
    one = parallel.slot_options(opts, job, port=8123, started=True)
    assert (one.method, one.bundle_name, one.baseline_result, one.port, one.slot) == (
        "ngram",
        None,
        "baseline-slot1",
        8123,
        "GPU-1",
    )
    assert (one.prometheus_targets, one.windows_port, one.port_wait) == (Path("/t/vllm-slot1.json"), 9401, 30.0)
    assert one.spec_override == {"num_speculative_tokens": 2}
    calibration = parallel.slot_options(
        opts, {**job, "method": "baseline", "name": "baseline-slot1", "baseline": ""}, port=8123, started=False
    )
    assert (calibration.bundle_name, calibration.baseline_result, calibration.spec_override, calibration.port_wait) == (
        "baseline-slot1",
        None,
        None,
        0.0,
    )  # K means nothing to plain decode


def test_cores_are_written_as_cpusets():
    assert parallel.ranges([0, 1, 2, 5, 7, 8]) == "0-2,5,7-8" and parallel.ranges([3]) == "3"


def test_a_slots_process_pins_itself_and_records_its_slot(tmp_path):
    """In a process of its own (the affinity is the process's): the cores it got, in its host record and the
    manifest, where the report's placement section reads them."""
    core = min(os.sched_getaffinity(0))
    opts = Options(
        method="baseline",
        run_id="r",
        results_dir=tmp_path,
        platform="cpu-native",
        bundle_name="baseline-slot1",
        slot=str(core),
    )
    spec = {"options": opts.to_json(), "slot": str(core), "cpuset": str(core)}
    code = (
        "import json, os, sys; from specstack.pipeline import parallel; "
        "o = parallel.enter_slot(json.loads(sys.argv[1])); print(json.dumps([o.bundle_name, "
        "sorted(os.sched_getaffinity(0)), os.environ.get('VLLM_CPU_OMP_THREADS_BIND')]))"
    )
    # a binding the caller had (a test worker's core, a user's shell) may lie outside the slot: the slot's own goes
    out = subprocess.run(
        [sys.executable, "-c", code, json.dumps(spec)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "VLLM_CPU_OMP_THREADS_BIND": "0-63"},
    )
    assert json.loads(out.stdout) == ["baseline-slot1", [core], None]
    record = json.loads((tmp_path / "r" / layout.host_record("baseline-slot1")).read_text())
    assert record["slot"] == {"cpuset": str(core), "asked": str(core)} and record["gpu"] is None
    manifest = json.loads((tmp_path / "r" / layout.MANIFEST).read_text())
    assert manifest["methods"]["baseline-slot1"]["slot"] == record["slot"]


ORPHANED_SLOT = """
import json, subprocess, sys, time
from specstack import interrupts
from specstack.pipeline import parallel
if sys.argv[1] == "harness":   # the sweep: starts the slot's process, says its pid, and waits (until SIGKILLed)
    child = subprocess.Popen([sys.executable, "-c", sys.argv[2], "slot", sys.argv[3], sys.argv[4]])
    print(child.pid, flush=True)
    child.wait()
else:   # the slot's process: enters its slot as `specstack slot-run` does, then measures (sleeps) until stopped
    with interrupts.as_exception():
        try:
            parallel.enter_slot(json.loads(sys.argv[2]))
            time.sleep(60)
            ended = "not stopped"
        except interrupts.Interrupted as e:
            ended = interrupts.reason(e)
    open(sys.argv[3], "w").write(ended)
"""


def test_a_slots_process_stops_when_its_sweep_is_killed(tmp_path):
    """kill -9 of a parallel sweep (no stop() runs): each slot's run notices its harness is gone and stops as if
    SIGTERMed (its server stopped, its bundle kept as failed: the interrupt path), instead of measuring on."""
    import signal
    import time

    import psutil

    core = min(os.sched_getaffinity(0))
    opts = Options(
        method="baseline",
        run_id="r",
        results_dir=tmp_path,
        platform="cpu-native",
        bundle_name="baseline-slot1",
        slot=str(core),
    )
    spec = {"options": opts.to_json(), "slot": str(core), "cpuset": str(core)}
    ended = tmp_path / "ended"
    harness = subprocess.Popen(
        [sys.executable, "-c", ORPHANED_SLOT, "harness", ORPHANED_SLOT, json.dumps(spec), str(ended)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert harness.stdout is not None
    slot = psutil.Process(int(harness.stdout.readline()))
    deadline = time.monotonic() + 60
    while not (tmp_path / "r" / layout.host_record("baseline-slot1")).exists():  # it entered its slot
        assert time.monotonic() < deadline and slot.is_running(), "the slot's process never entered its slot"
        time.sleep(0.1)
    harness.send_signal(signal.SIGKILL)
    harness.wait()
    slot.wait(30)
    assert ended.read_text() == "interrupted (SIGTERM); rerun the same command to resume"


def test_calibrate_without_slots_is_refused_by_the_command(tmp_path):
    out = subprocess.run(
        [
            str(Path(sys.executable).with_name("specstack")),
            "sweep",
            "--methods",
            "baseline",
            "--calibrate",
            "--results",
            str(tmp_path),
            "--platform",
            "cpu-native",
        ],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2 and "give the slots (--gpus 0,1 or --cpusets 0,1)" in out.stderr
    assert list(tmp_path.iterdir()) == []


STAND_IN_SPECSTACK = """#!{python}
import json, os, sys
from specstack.pipeline import parallel
from specstack.results import run_lock
opts = parallel.enter_slot(json.loads(open(sys.argv[2]).read()))
try:   # as the slot's run_method takes it: a part of the sweep's run joins the sweep's lock
    run_lock.acquire(os.path.join(opts.results_dir, opts.run_id))
    lock = "joined"
except Exception as e:
    lock = str(e)
with open(os.path.join(os.environ["FAKE_STATE"], "runs.jsonl"), "a") as f:
    f.write(json.dumps({{"name": opts.bundle_name or opts.method, "cuda": os.environ["CUDA_VISIBLE_DEVICES"],
                        "baseline_result": opts.baseline_result, "port": opts.port, "slot": opts.slot,
                        "lock": lock}}) + "\\n")
"""


def test_the_gpu_form_gives_each_slot_its_gpu_and_waits_for_its_memory(tmp_path, monkeypatch):
    """--gpus 0,1 --calibrate with a stand-in nvidia-smi and a stand-in `specstack slot-run` that enters its slot
    as the real one does: CUDA_VISIBLE_DEVICES is the slot's GPU, the slot's facts (UUID, name) are recorded, each
    method is told its own GPU's baseline, and each GPU's next server waits until nvidia-smi shows it free."""
    from tests.compose.gpu_form.stand_in import FAKE_NVIDIA_SMI

    bin_dir, state = tmp_path / "bin", tmp_path / "state"
    bin_dir.mkdir()
    state.mkdir()
    for name, text in (
        ("nvidia-smi", FAKE_NVIDIA_SMI.replace("__PYTHON__", sys.executable)),
        ("specstack", STAND_IN_SPECSTACK.format(python=sys.executable)),
    ):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_STATE", str(state))
    monkeypatch.setattr(parallel, "SPECSTACK", str(bin_dir / "specstack"))
    monkeypatch.setattr(parallel, "GPU_FREE_POLL", 0.01)
    opts = Options(method="baseline", run_id="r", results_dir=tmp_path / "results", platform="gpu-native", port=8100)
    assert parallel.parallel_sweep(opts, ["baseline", "ngram"], gpus="0,1", calibrate=True, report=False) == []
    runs = {r["name"]: r for r in map(json.loads, (state / "runs.jsonl").read_text().splitlines())}
    assert sorted(runs) == ["baseline", "baseline-slot1", "ngram"]
    assert {r["lock"] for r in runs.values()} == {"joined"}, "a slot of the sweep was refused its own run"
    assert (runs["baseline"]["cuda"], runs["baseline"]["port"]) == ("0", 8100)
    assert (runs["baseline-slot1"]["cuda"], runs["baseline-slot1"]["port"]) == ("1", 8101)
    ngram = runs["ngram"]
    assert ngram["baseline_result"] == ("baseline" if ngram["cuda"] == "0" else "baseline-slot1")
    manifest = json.loads((tmp_path / "results" / "r" / layout.MANIFEST).read_text())
    assert manifest["mode"] == "parallel" and manifest["slots"] == [
        {"gpu": "0", "cpuset": None},
        {"gpu": "1", "cpuset": None},
    ]
    slot = manifest["methods"]["baseline-slot1"]["slot"]
    assert (slot["gpu_index"], slot["gpu_uuid"], slot["gpu_name"]) == ("1", "GPU-def", "NVIDIA H100 80GB HBM3")
    polls = [
        c for c in map(json.loads, (state / "calls.jsonl").read_text().splitlines()) if "--query-gpu=memory.used" in c
    ]
    assert sorted({c[c.index("-i") + 1] for c in polls}) == ["0", "1"] and len(polls) >= 3 * 2


STAND_IN_SLOW_SLOT = """#!{python}
import json, os, signal, sys, time
spec = json.loads(open(sys.argv[2]).read())
name = spec["options"]["bundle_name"] or spec["options"]["method"]
state = os.environ["FAKE_STATE"]
def stop(signum, frame):
    open(os.path.join(state, name + ".stopped"), "w").write(signal.Signals(signum).name)
    sys.exit(128 + signum)
signal.signal(signal.SIGTERM, stop)
open(os.path.join(state, name + ".pid"), "w").write(str(os.getpid()))
time.sleep(120)
"""

SWEEP = """import sys
from specstack import interrupts
from specstack.pipeline import parallel
from specstack.runs.options import Options
parallel.SPECSTACK = sys.argv[1]
opts = Options(method="baseline", run_id="r", results_dir=sys.argv[2], platform="cpu-native")
try:
    with interrupts.as_exception():
        parallel.parallel_sweep(opts, ["baseline", "ngram"], cpusets=sys.argv[3], report=False)
except KeyboardInterrupt as e:
    sys.exit(e.exit_code)
"""


def test_sigterm_to_the_sweep_alone_reaches_every_slots_run(tmp_path):
    """SIGTERM to the sweep's process only (as `kill PID` or a scheduler sends it; the slots' processes are not
    told by anyone else): the sweep sends each running slot's process SIGTERM, waits for them, and exits 143
    with none left. (What a real slot's run does with that SIGTERM, its server stopped and its method kept as
    failed: tests/integration/test_interrupt.py.)"""
    import signal
    import time

    state = tmp_path / "state"
    state.mkdir()
    stand_in = tmp_path / "specstack"
    stand_in.write_text(STAND_IN_SLOW_SLOT.format(python=sys.executable))
    stand_in.chmod(0o755)
    cores = sorted(os.sched_getaffinity(0))
    slots = ",".join(str(c) for c in cores[:2]) if len(cores) > 1 else f"{cores[0]}"
    proc = subprocess.Popen(
        [sys.executable, "-c", SWEEP, str(stand_in), str(tmp_path / "results"), slots],
        env={**os.environ, "FAKE_STATE": str(state)},
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    running = ["baseline", "ngram"][: len(slots.split(","))]
    try:
        deadline = time.monotonic() + 30
        while not all((state / f"{n}.pid").exists() for n in running):
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.05)
        pids = [int((state / f"{n}.pid").read_text()) for n in running]
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert code == 128 + signal.SIGTERM, proc.communicate()
    assert [(state / f"{n}.stopped").read_text() for n in running] == ["SIGTERM"] * len(running)
    time.sleep(0.2)
    assert not [p for p in pids if _alive(p)]
    assert not (state / "ngram.pid").exists() or len(running) == 2  # no method started after the signal


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False
