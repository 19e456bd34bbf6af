"""The flows make calls on the compose stack: `make run`, `make sweep` (serial, or in parallel on slots), the compose
path of `make reproduce`, `logs`, `status` (services/compose.mk calls these, one line each; `make down` is
Stack.down). The stack is host/compose_stack.py, one method's server host/compose_server.py.

One method: its models into the cache -> pre-flight in its image -> its Prometheus target -> server up (healthy)
-> its log so far and host provenance -> collector -> server stopped. Whatever happens, the server's log (this
start's lines) is saved into results/<run-id>/host-provenance/ before it stops, and the target is cleared.

Interrupted (specstack/interrupts.py, the native run's too): the method's cleanup stops its server, the collector
stops on the signal and keeps its method as <method>.failed-* ("interrupted"), then everything the stack started is
stopped and removed as `make down` does; the exit status is 128 + the signal's number."""

from __future__ import annotations

import functools
import os
import shutil
from dataclasses import replace
from pathlib import Path

from specstack import interrupts
from specstack.errors import UserError
from specstack.host import HostError, reproduction
from specstack.host.compose_server import ComposeServer
from specstack.host.compose_stack import Stack
from specstack.host.gpu import nvidia_smi_host
from specstack.host.image_lock import read_lock
from specstack.host.provenance import cpu_host
from specstack.host.stack import GRAFANA_SECRET, RESULTS, Place, Shell
from specstack.pipeline.serial import one_by_one
from specstack.pipeline.slots import parallel
from specstack.results import layout, run_lock


def _lock_run(stack: Stack, run_id: str) -> bool:
    """This make call is the one harness of the run (results/run_lock.py) until its flow ends: another make or
    specstack of the run id is refused before any server starts; the collectors it starts join with its token."""
    try:
        run_lock.acquire(RESULTS / run_id)
    except UserError as e:
        stack.sh.say(f"specstack containers: {e}", err=True)
        return False
    return True


def _interrupted(stack: Stack, e: interrupts.Interrupted) -> int:
    stack.down(quiet=True)
    stack.sh.say(f"interrupted ({e.name}): every container of the stack stopped and removed (make down)", err=True)
    return e.exit_code


def one_method(
    stack: Stack,
    method: str,
    *,
    run_id: str,
    place: Place | None = None,
    result: str = "",
    baseline_result: str = "",
    k: str | None = None,
    reproduce_of: str = "",
    allow_drift: bool = False,
) -> int:
    """One method end to end on an up stack (the module's docstring): 0, or the failing step's status."""
    s = stack.s
    server = ComposeServer(
        stack, method, run_id=run_id, place=place or Place(s.gpu, s.cpuset), result=result or method, k=k
    )
    try:
        rc = server.prepare()
        if rc:
            return rc
        interrupts.check()
        rc = server.start()
        if rc:
            return rc
        interrupts.check()
        server.server_log()
        server.host_facts()
        interrupts.check()
        return stack.collect(
            server, baseline_result=baseline_result, reproduce_of=reproduce_of, allow_drift=allow_drift
        )
    finally:
        server.stop()


def run(stack: Stack, method: str) -> int:
    """make run METHOD=…: one method end to end; results in results/<RUN_ID>/."""
    s = stack.s
    rc = stack.check(method) or stack.prepare()
    if rc:
        return rc
    grafana = stack.grafana_here()
    if not _lock_run(stack, s.run_id):
        return 2
    with interrupts.as_exception():
        try:
            rc = stack.start([method])
            if rc:
                return rc
            rc = one_method(stack, method, run_id=s.run_id)
            if stack.report() != 0 and rc == 0:
                rc = 1
            admin = f" (admin, password in {GRAFANA_SECRET})" if s.gpu_platform else ""
            stack.sh.say(stack.where(s.run_id, grafana) + admin)
            return rc
        except interrupts.Interrupted as e:
            return _interrupted(stack, e)
        finally:
            run_lock.release(RESULTS / s.run_id)


def sweep(stack: Stack) -> int:
    """make sweep: every method strictly one at a time on one GPU (or CPU set), one RUN_ID; with slots (GPUS,
    CPUSETS), one method per slot at once and a queue for the rest, still one RUN_ID."""
    s = stack.s
    if not s.sweep:
        return stack.refuse(
            "make sweep: no methods (SWEEP_METHODS is empty); give some, e.g. "
            'SWEEP_METHODS="baseline ngram", or leave it unset for methods.toml\'s [sweep]'
        )
    rc = stack.check_knobs(s.sweep) or stack.prepare() or stack.check_slots()
    if rc:
        return rc
    for gpu in s.gpus.split(",") if s.gpu_platform and s.gpus else [s.gpu]:
        if stack.check("baseline", gpu=gpu):
            return 2
    grafana = stack.grafana_here()
    if not _lock_run(stack, s.run_id):
        return 2
    with interrupts.as_exception():
        try:
            rc = stack.start(s.sweep)
            if rc:
                return rc
            failed = ""
            if s.parallel_slots:
                if parallel_sweep(stack):
                    failed = " (see the methods above)"
            else:
                failed = one_by_one(
                    [
                        (m, f"=== sweep {s.run_id}: {m} ===", functools.partial(one_method, stack, m, run_id=s.run_id))
                        for m in s.sweep
                    ],
                    say=stack.sh.say,
                    stop=functools.partial(_gpu_held, stack),
                )
            if stack.report() != 0:
                failed += " report"
            stack.sh.say(stack.where(s.run_id, grafana))
            if failed:
                stack.sh.say(f"sweep {s.run_id} failed:{failed}", err=True)
                return 1
            return 0
        except interrupts.Interrupted as e:
            return _interrupted(stack, e)
        finally:
            run_lock.release(RESULTS / s.run_id)


def _gpu_held(stack: Stack, method: str) -> bool:
    """On a GPU each next method waits for the last one's memory: the rest of a serial flow is dropped if it is
    not released."""
    if stack.s.gpu_platform and not stack.gpu_free(stack.s.gpu):
        stack.sh.say(f"sweep stopped: the GPU did not free up after {method}", err=True)
        return True
    return False


def parallel_sweep(stack: Stack) -> list[str]:
    """The methods of the sweep on its slots at once (pipeline/slots.py: the queue), each a whole method flow in a
    thread of its own with its output prefixed; on GPU the next method of a slot waits for that GPU's memory."""
    s = stack.s

    def one(job: dict) -> int:
        slot_stack = stack.with_shell(Shell(prefix=job["name"]))
        index = int(job["index"])
        place = (
            Place(gpu=job["slot"], cpuset=s.cpuset, slot=index, gpu_cpuset=job["cpuset"])
            if s.gpu_platform
            else Place(gpu=s.gpu, cpuset=job["slot"], slot=index)
        )
        rc = one_method(
            slot_stack, job["method"], run_id=s.run_id, place=place, result=job["name"], baseline_result=job["baseline"]
        )
        if s.gpu_platform and not slot_stack.gpu_free(place.gpu):
            rc = rc or 1
        return rc

    try:
        failed = parallel(
            platform=s.serve_platform,
            slots_text=s.parallel_slots,
            cores=os.cpu_count() or 1,
            methods=s.sweep,
            command=one,
            run_dir=RESULTS / s.run_id,
            cpusets=s.cpusets if s.gpu_platform else "",
            baselines=s.methods.baselines,
            calibrate=s.calibrate == "1",
        )
    except HostError as e:
        stack.sh.say(f"specstack containers: {e}", err=True)
        return ["(no method started)"]
    if failed:
        stack.sh.say(f"parallel sweep {s.run_id} failed: {' '.join(failed)}", err=True)
    return failed


def plan_reproduction(
    run: Path,
    run_id: str,
    *,
    methods: str | None,
    allow_drift: bool,
    say,
    results: Path = RESULTS,
    out: Path = Path(".specstack/reproduce"),
):
    """The plan of reproducing a compose run and its lock file (the images by digest), or None for a native run.
    HostError when it cannot be reproduced here."""
    folder = results.resolve()
    run = run if run.is_dir() or "/" in str(run) else folder / run
    if not run.is_dir():
        raise HostError(f"no run folder {run}: name a folder under {results}/ (RUN=results/<run-id>)")
    if not reproduction.is_compose_run(run):
        return None
    if run.resolve().parent != folder:
        raise HostError(
            f"{run} is not a folder of {results}/: the collector container sees only that folder; "
            f"copy or unpack the bundle there (e.g. {results}/{run.name})"
        )
    wanted = [m for m in (methods or "").replace(",", " ").split() if m] or None
    p = reproduction.plan(run, here_cpu=cpu_host(), here_gpu=nvidia_smi_host(), methods=wanted)
    for note in p.skipped:
        say(f"not reproduced: {note}")
    if p.drift and not allow_drift:
        raise HostError(
            f"this machine differs from the one {p.original} ran on: "
            + "; ".join(p.drift)
            + "; use a machine like it, or ALLOW_DRIFT=1 to run anyway (recorded in the reproduction)"
        )
    for d in p.drift:
        say(f"ran despite drift: {d}")
    lock, _ = reproduction.write(p, out, run_id)
    say(
        f"reproduce {p.original} as {run_id}: {', '.join(m for m, _ in p.methods)} on PLATFORM={p.platform} "
        f"MODEL_SET={p.model_set}, images by digest in {lock}"
    )
    return p, lock


def reproduce(
    stack: Stack, *, run: Path, run_id: str, methods: str | None, allow_drift: bool, speed_tolerance: str
) -> int:
    """make reproduce RUN=results/<run> of a compose run: the images pulled by their recorded digests, each
    recorded method served and measured again on this platform's stack, then compared with the original.
    reproduction.NATIVE (3) for a native run (make runs the venv's `specstack reproduce`)."""
    planned = plan_reproduction(run, run_id, methods=methods, allow_drift=allow_drift, say=stack.sh.say)
    if planned is None:
        return reproduction.NATIVE
    p, lock = planned
    # The recorded run's platform, model set, prefix caching and images; WAIT_TIMEOUT the platform's unless given.
    s = replace(
        stack.s,
        platform=p.platform,
        model_set=p.model_set,
        prefix_caching="1" if p.prefix_caching else "",
        images_lock=str(lock),
        run_id=run_id,
    )
    stack = Stack(s, stack.sh)
    rc = stack.prepare() or stack.check("baseline")
    if rc:
        return rc
    stack.sh.say("--- images by digest, from their registry (none from a local tag)")
    for ref in (v for v in read_lock(lock).values() if "@sha256:" in v):
        stack.sh.say(f"pull {ref}")
        if stack.sh.run([s.docker, "pull", "-q", ref], quiet=True) != 0:
            stack.sh.say(
                f"cannot pull {ref}: the registry that held it at run time must be reachable (docs/reproduce.md)",
                err=True,
            )
            return 2
    rc = stack.stack_up() or stack.models()
    if rc:
        return rc
    if not _lock_run(stack, run_id):
        return 2
    with interrupts.as_exception():
        try:
            failed = one_by_one(
                [
                    (
                        m,
                        f"=== reproduce {p.original} as {run_id}: {m} ===",
                        functools.partial(
                            one_method, stack, m, run_id=run_id, k=k, reproduce_of=p.original, allow_drift=allow_drift
                        ),
                    )
                    for m, k in p.methods
                ],
                say=stack.sh.say,
                stop=functools.partial(_gpu_held, stack),
            )
            if stack.report() != 0:
                failed += " report"
            compare = [
                "run",
                "--rm",
                "collector",
                "reproduce",
                f"/results/{p.original}",
                "--measured",
                run_id,
                "--results",
                "/results",
                *(["--speed-tolerance", speed_tolerance] if speed_tolerance else []),
            ]
            rc = stack.compose(*compare)
            stack.sh.say(f"results: results/{run_id}/   compare: results/{layout.compare_dir(p.original, run_id)}/")
            if failed:
                stack.sh.say(f"reproduce {run_id} failed:{failed}", err=True)
                return 1
            return rc
        except interrupts.Interrupted as e:
            return _interrupted(stack, e)
        finally:
            run_lock.release(RESULTS / run_id)


def logs(stack: Stack, service: str) -> int:
    return stack.compose(*stack.all_profiles(), "logs", "-f", "--tail", "200", *([service] if service else []))


def status(stack: Stack) -> int:
    """Containers, health, GPU memory."""
    rc = stack.compose(*stack.all_profiles(), "ps", "-a")
    if rc or not stack.s.gpu_platform:
        return rc
    if shutil.which("nvidia-smi") is None:
        stack.sh.say("nvidia-smi not found on this host")
        return 0
    return stack.sh.run(
        ["nvidia-smi", "--query-gpu=index,name,memory.used,memory.total,utilization.gpu", "--format=csv"]
    )
