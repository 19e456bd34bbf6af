"""`specstack sweep --gpus 0,1 | --cpusets 0,1 [--calibrate]`: a sweep's methods side by side on a host's slots,
natively (no Docker: GPU hosts under Slurm, air-gapped ones), as `make sweep GPUS=0,1` does through compose.

The slots, the queue and calibration are pipeline/slots.py's, one owner for both forms: a free slot takes the next
method; calibrating, each baseline runs on every slot (`<baseline>-slot<i>`) and each method is compared with the
baseline measured on its own slot. Each method is a process of its own (`specstack slot-run`, one server and one
collector, as a compose slot is one server container and one collector container): pinned to its slot's GPU
(CUDA_VISIBLE_DEVICES) or cores (its CPU affinity, which the server inherits), its server on its slot's port, its
Prometheus target labelled with the slot. What the slot was (GPU index, UUID and name from nvidia-smi, or the
cores the process got) goes into the method's host record and the manifest, where report/placement.py reads it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from specstack import interrupts
from specstack.config import methods
from specstack.config.serving import Runtime
from specstack.errors import UserError
from specstack.host import HostError
from specstack.host.gpu import nvidia_smi_host, wait_gpu_free
from specstack.host.provenance import cpu_host, slot_of
from specstack.pipeline import slots
from specstack.results import layout, run_lock
from specstack.results.bundle import update_manifest
from specstack.results.files import atomic_write_json
from specstack.results.reader import good_result
from specstack.runs.options import Options
from specstack.server.runtime import free_port

# What runs one method on its slot: this environment's specstack (the console script beside its python).
SPECSTACK = str(Path(sys.executable).with_name("specstack"))
KNOBS = {
    "GPUS": "--gpus",
    "CPUSETS": "--cpusets",
    "CALIBRATE=1": "--calibrate",
    "SWEEP_METHODS (or SWEEP_MTP_METHODS)": "--methods",
}
STOP_GRACE = 60.0
GPU_FREE_MIB, GPU_FREE_TIMEOUT, GPU_FREE_POLL = (
    1024,
    300.0,
    2.0,
)  # as make's GPU_FREE_MIB, _TIMEOUT, _POLL   # a stopped slot's run finishes its bundle as failed and stops its server within this


def check(opts: Options, gpus: str, cpusets: str) -> None:
    """What a parallel sweep cannot do, said before anything starts."""
    gpu = opts.platform.on_gpu
    if opts.runtime != Runtime.NATIVE:
        raise UserError(
            "--gpus/--cpusets run each method's own server on its slot: they need the native runtime "
            "(drop --url / --runtime url)"
        )
    if gpu and not gpus:
        raise UserError(
            f"--platform {opts.platform} runs on GPUs: give them with --gpus (e.g. --gpus 0,1; "
            "--cpusets then pins each GPU's server to cores of its own)"
        )
    if not gpu and gpus:
        raise UserError(
            f"--gpus on --platform {opts.platform}: a CPU platform's slots are CPU sets, give "
            "--cpusets (e.g. --cpusets 0,1 or 0-3,4-7)"
        )
    if not Path(SPECSTACK).is_file():
        raise UserError(
            f"a parallel sweep runs each method as `specstack slot-run`, but {SPECSTACK} is not there: "
            "run the sweep with the `specstack` command of the environment it is installed in"
        )
    if opts.replicate == "sessions" or opts.turns > 1 or opts.rates_auto:
        raise UserError(
            "--replicate sessions, --turns 2 and --rates auto order the methods after their baselines; "
            "a parallel sweep runs them side by side: run those serially (without --gpus/--cpusets)"
        )


def slot_options(opts: Options, job: dict[str, str], port: int, started: bool) -> Options:
    """One job's options: its method and result folder, the baseline result it is compared with, its slot's port
    (waiting for it after a stopped server of that slot), target file and windows port."""
    index = int(job["index"])
    targets = opts.prometheus_targets
    return dataclasses.replace(
        opts,
        method=job["method"],
        bundle_name=job["name"] if job["name"] != job["method"] else None,
        baseline_result=job["baseline"] or None,
        port=port,
        slot=job["slot"],
        spec_override=opts.spec_override if methods.is_speculative(job["method"]) else None,
        prometheus_targets=targets.with_name(f"{targets.stem}-slot{index}{targets.suffix}") if targets else None,
        windows_port=opts.windows_port + index if opts.windows_port is not None else None,
        port_wait=opts.port_release_timeout if started else 0.0,
    )


def parallel_sweep(
    opts: Options, names: list[str], *, gpus: str = "", cpusets: str = "", calibrate: bool = False, report: bool = True
) -> list[str]:
    """The methods on their slots at once, then the run's report; the results that failed."""
    check(opts, gpus, cpusets)
    cfg = methods.load()
    names = [methods.resolve_method(cfg, n) for n in names]  # a typo fails before any server starts
    for name in names:  # so does a method the model set has no model for
        methods.check_model_set(name, opts.model_set)
    run_dir, gpu = Path(opts.results_dir) / opts.run_id, opts.platform.on_gpu
    run_lock.acquire(run_dir)  # one harness per run (its slots' runs join it); released in the finally below
    work = Path(tempfile.mkdtemp(prefix="specstack-slots-"))
    ports: dict[int, int] = {}
    started: set[int] = set()
    running: dict[str, subprocess.Popen] = {}
    lock = threading.Lock()

    def one(job: dict[str, str]) -> int:
        index = int(job["index"])
        if not opts.force and good_result(run_dir, job["name"]) is not None:
            print(f"[{job['name']}] already done in run {opts.run_id}, skipped (--force reruns it)", flush=True)
            return 0
        with lock:  # a port per slot, taken once: two slots never probe their way to the same one
            if index not in ports:
                ports[index] = opts.port + index if opts.port else _unused(set(ports.values()))
            port = ports[index]
        spec = work / f"{job['name']}.json"
        spec.write_text(
            json.dumps(
                {
                    "options": slot_options(opts, job, port, index in started).to_json(),
                    "slot": job["slot"],
                    "cpuset": job["cpuset"],
                }
            )
        )
        started.add(index)
        # a part of this harness's run: its token joins the lock, the inherited descriptor keeps it held while any
        # slot's run lives (results/run_lock.py)
        fd = run_lock.inheritable_fd(run_dir)
        proc = subprocess.Popen(
            [SPECSTACK, "slot-run", str(spec)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            bufsize=1,
            env={**os.environ, run_lock.TOKEN_ENV: run_lock.token()},
            pass_fds=(fd,) if fd is not None else (),
        )
        with lock:
            running[job["name"]] = proc
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                sys.stdout.write(f"[{job['name']}] {line}")
                sys.stdout.flush()
            code = proc.wait()
        finally:
            with lock:
                running.pop(job["name"], None)
        if gpu:  # the slot's next server waits until this one's memory is released (bounded), as compose's does
            try:
                wait_gpu_free(
                    job["slot"],
                    max_used_mib=GPU_FREE_MIB,
                    timeout=GPU_FREE_TIMEOUT,
                    poll=GPU_FREE_POLL,
                    log=lambda line: print(f"[{job['name']}] {line}", flush=True),
                )
            except HostError as e:
                print(f"[{job['name']}] {e}", file=sys.stderr, flush=True)
                return code or 1
        return code

    def stop() -> None:
        """Interrupted: every running slot's run is told to stop (SIGTERM: its server stopped, its bundle kept as
        failed), then waited for; one that does not end in time is killed."""
        with lock:
            procs = list(running.values())
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(STOP_GRACE)
            except subprocess.TimeoutExpired:
                p.kill()

    try:
        failed = slots.parallel(
            platform=opts.platform,
            slots_text=gpus or cpusets,
            cores=os.cpu_count() or 1,
            methods=names,
            command=one,
            run_dir=run_dir,
            cpusets=cpusets if gpus else "",
            baselines={m: methods.baseline_of(m) or "" for m in names},
            calibrate=calibrate,
            stop=stop,
        )
        if report and run_dir.is_dir():
            from specstack.report.build import write_report  # pandas and matplotlib only when a report is written

            print(f"report: {write_report(run_dir)}", file=sys.stderr)
    except HostError as e:  # pipeline/slots.py names make's knobs: say the sweep's own options instead
        message = str(e)
        for knob, option in KNOBS.items():
            message = message.replace(knob, option)
        raise UserError(message) from None
    finally:
        shutil.rmtree(work, ignore_errors=True)
        run_lock.release(run_dir)
    return failed


def _unused(taken: set[int]) -> int:
    while (port := free_port()) in taken:
        pass
    return port


# --- inside a slot's process (`specstack slot-run`) ------------------------------------------------------------


def enter_slot(spec: dict) -> Options:
    """Pin this process (and the server it starts) to the slot, record the slot, and return the run's options.
    The slot's run ends with its sweep: a sweep killed outright (no `stop()`) leaves no slot measuring on."""
    interrupts.stop_when_orphaned()
    opts = Options.from_json(spec["options"])
    gpu = opts.platform.on_gpu
    if spec.get("cpuset"):
        os.sched_setaffinity(0, slots.cores_of(spec["cpuset"]))
        # The slot's cores decide where vLLM's CPU worker binds (its auto binding reads this affinity): a binding
        # inherited from the caller (VLLM_CPU_OMP_THREADS_BIND, e.g. a test worker's core) may name cores
        # outside the slot, where the worker cannot run.
        os.environ.pop("VLLM_CPU_OMP_THREADS_BIND", None)
    if gpu:
        os.environ["CUDA_VISIBLE_DEVICES"] = spec["slot"]
    name = opts.bundle_name or opts.method
    got = ranges(sorted(os.sched_getaffinity(0)))
    cpu = {**cpu_host(), "server_cpuset": got}
    smi = nvidia_smi_host() if gpu else None
    slot = (
        slot_of(smi, None, spec["slot"], got if spec.get("cpuset") else None)
        if gpu
        else slot_of(None, cpu, spec["slot"])
    )
    run_dir = Path(opts.results_dir) / opts.run_id
    atomic_write_json(
        run_dir / layout.host_record(name), {"source": "native parallel sweep", "slot": slot, "gpu": smi, "cpu": cpu}
    )
    update_manifest(run_dir, methods={name: {"slot": slot}})
    return opts


def ranges(cores: list[int]) -> str:
    """0,1,2,5 -> "0-2,5" (how cpusets are written)."""
    out: list[str] = []
    for c in cores:
        if out and c == int(out[-1].split("-")[-1]) + 1:
            out[-1] = f"{out[-1].split('-')[0]}-{c}"
        else:
            out.append(str(c))
    return ",".join(out)
