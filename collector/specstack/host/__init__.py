"""Host-side helpers of the compose stack (compose.yaml, services/compose.mk): what ran, on which GPU or CPUs.

No container gets the Docker socket: anyone who can write to it is root on the host, and the collector talks
to the network. So the facts only Docker knows are gathered here, on the host, by the user who already runs
`docker compose`, and written to files the collector reads. One module a job:

  cli          the actions below (`python3 -m specstack.host ACTION`, or `specstack containers ACTION`); parallel /
               check-slots are pipeline/slots.py's queue and slots (make sweep GPUS=0,1 / CPUSETS=0,1)
  lifecycle    compose: the flows make calls (run, sweep serial or on slots, the compose path of reproduce, logs,
               status; their loops are pipeline/serial.py's and pipeline/slots.py's), and the flow of one method:
               its server prepared and started, its log and provenance, the collector, the server stopped whatever
               happens
  compose_stack  the compose stack of one make call: pre-checks, folders and secrets, images once, Prometheus
               (and Grafana), models, the collector of one method, a GPU's memory released, the report, down
  compose_server  one method's server as a compose service: models into the cache and pre-flight in its image,
               its Prometheus target, up and healthy (killed if not), its log and provenance, stopped or killed
  stack        make's knobs (services/compose.mk), the `docker compose` command, the shell commands run in
               sweep-methods: methods.toml's [sweep], the one default list (make's SWEEP_METHODS, SWEEP_MTP_METHODS)
  provenance   record: results/<run-id>/host-provenance/<method>.json: image digests and labels (versions) of
               every running container of the project, nvidia-smi / driver / CUDA versions (GPU) or the CPU
               model and the server's cpuset (CPU), and what the method's server loaded (snapshot)
  snapshot     the script that finds, inside the server container, the Hugging Face snapshot (commit hash)
               of each model the method loads
  server_log   save-log: results/<run-id>/host-provenance/<method>.server.log: this start's lines of the
               method's server container (compose keeps a stopped container's old log when it starts it again)
  gpu          check-gpu-host: before anything is pulled, the driver is new enough for the image's CUDA and the
               GPU's compute capability for the dtype (names the fix: the -cu129 image, a driver upgrade);
               wait-gpu-free: block (bounded) until a GPU's memory is released after a server stopped
  disk         check-disk: before `make images` builds, room where Docker keeps its images (names the fix)
  targets      targets: write / clear the Prometheus file_sd target file (method and run_id labels)
  reproduction reproduce-plan: what make reproduce of a compose run takes from its bundle
  image_ref    image references: their parts, and whether one is pinned (check-lock)
  registry     the digest a tag points to now (registry API, token auth; `docker buildx` as a fallback)
  image_lock   lock: rewrite every image tag of images.lock as tag@digest
  engine       Docker itself: its SDK when importable (the project venv has it), else the `docker` CLI

Standard library only, on purpose: make starts it with the host's plain `python3` (`$(HOST_PYTHON)`, with
PYTHONPATH=collector), before any venv exists and outside every container. Besides the standard library it
imports only specstack/__init__.py, errors.py, interrupts.py (SIGINT/SIGTERM/SIGHUP as one exception, shared with
the native run: each step's cleanup, then make down, exit 128 + N), results/files.py (the one atomic writer),
results/bundle.py (the manifest's one writer, under its lock), pipeline/serial.py (the serial sweep's loop) and
pipeline/slots.py (the parallel sweep's slots and queue: make sweep GPUS=0,1 / CPUSETS=0,1), both shared with the
native sweeps, which are standard library only too (tests/host/test_cli.py checks the whole import graph and that
it parses as Python 3.8); the docker SDK is imported lazily and is optional.
"""


class HostError(RuntimeError):
    """Something on the host is missing or wrong; the message says what to do."""
