# Compose stack targets (included by the top-level Makefile): run, sweep, down, lock, logs, status.
#
#   make run METHOD=ngram          one method: images built once, models fetched, pre-flight, server +
#                                  Prometheus + Grafana, collector, report
#   make sweep                     methods.toml's [sweep] methods, then its mtp_methods, one at a time
#   make sweep SCHEDULER=slurm     the same methods as Slurm job arrays, native venv (docs/slurm.md)
#   make sweep GPUS=0,1            the same methods in parallel, one server per GPU at a time (a queue);
#                                  (CPUSETS=0-15,16-31: each GPU's server on its own cores);
#                                  PLATFORM=cpu: CPUSETS=0,1 (one core or range of cores per server);
#                                  CALIBRATE=1: each baseline on every slot, each method compared on its own
#   make down                      stop everything; volumes (model cache, compile cache, Prometheus) stay
#   make lock                      resolve every image tag of the platform's lock file to its digest
#   make reproduce RUN=results/<r> a compose run again from its bundle: images pulled by recorded digest, each
#                                  method served and measured again, compared with the original (Makefile)
#   make logs [SERVICE=vllm-ngram] / make status
#
# PLATFORM=gpu (default): compose.yaml + images.lock, one NVIDIA GPU. PLATFORM=cpu: compose.yaml +
# compose.cpu.yaml + images.cpu.lock, vLLM's CPU build in images built here (`make images PLATFORM=cpu`,
# images/images.mk), the tiny models with MODEL_SET=tiny.
#
# Knobs (make VAR=value): METHOD, RUN_ID (default: a timestamp; a sweep shares one), MODEL_SET (default),
# K (num_speculative_tokens override for the spec methods), GPU (device id or UUID, default 0),
# CPUSET (cpu: the cores of every vLLM container, default all), IMAGES_LOCK (default per platform),
# RUN_ARGS (extra `specstack run` options, e.g. "--concurrency 1,4,16 --repeats 3"), GPU_FREE_MIB,
# PREFIX_CACHING=1 (every server with enable-prefix-caching, recorded by the collector as --prefix-caching; a run
# id keeps one setting), GPU_FREE_TIMEOUT, WAIT_TIMEOUT (seconds a server may take to become healthy once its models are in the cache;
# also its healthcheck start_period), SWEEP_METHODS / SWEEP_MTP_METHODS (default: methods.toml's [sweep]),
# GPUS / CPUSETS (make sweep in parallel: the slots; slot i's server is published on VLLM_PORT+i), CALIBRATE=1
# (with GPUS / CPUSETS: the baselines on every slot).
# Environment: HF_TOKEN (passed to the servers as a compose secret), SPECSTACK_BIND_ADDRESS (default
# 127.0.0.1; 0.0.0.0 exposes the ports), VLLM_PORT / PROMETHEUS_PORT / GRAFANA_PORT, COMPOSE_PROJECT_NAME.

DOCKER ?= docker
HOST_PYTHON ?= python3
PLATFORM ?= gpu
MODEL_SET ?= default
GPU ?= 0
CPUSET ?= 0-$(shell echo $$(( $$(nproc) - 1 )))
# make sweep in parallel: the GPUs (gpu) or the CPU sets (cpu), comma-separated, one server on each at a time.
GPUS ?=
CPUSETS ?=
# A calibrated parallel sweep (CALIBRATE=1): each baseline on every slot, each method compared on its own slot.
CALIBRATE ?=
# make sweep SCHEDULER=slurm: the sweep as Slurm job arrays (`specstack slurm submit`); SLURM_ARGS: its own options.
SCHEDULER ?=
SLURM_ARGS ?=
ifneq ($(filter-out slurm,$(SCHEDULER)),)
$(error SCHEDULER must be empty (compose) or slurm, not '$(SCHEDULER)')
endif
K ?=
PREFIX_CACHING ?=
RUN_ARGS ?=
GPU_FREE_MIB ?= 1024
GPU_FREE_TIMEOUT ?= 300
GPU_FREE_POLL ?= 2
ifeq ($(PLATFORM),gpu)
IMAGES_LOCK ?= images.lock
else ifeq ($(PLATFORM),cpu)
IMAGES_LOCK ?= images.cpu.lock
else
$(error PLATFORM must be gpu (the default) or cpu, not '$(PLATFORM)')
endif
# WAIT_TIMEOUT: unset, the platform's default (gpu 3600 s, cpu 600 s; make reproduce: the recorded run's platform).
# make sweep's methods, SWEEP_METHODS then SWEEP_MTP_METHODS: unset, services/methods.toml's [sweep] methods and
# mtp_methods (the one default list), printed by the host helper once, when make sweep needs them; a bad [sweep]
# stops make with the helper's message naming the fix.
sweep_default = $(shell $(CONTAINERS_PY) sweep-methods $(1))$(if $(filter-out 0,$(.SHELLSTATUS)),$(error \
  services/methods.toml's [sweep] is refused (the line above says why); fix it, or give SWEEP_METHODS))
SWEEP_METHODS ?= $(eval SWEEP_METHODS := $$(call sweep_default))$(SWEEP_METHODS)
SWEEP_MTP_METHODS ?= $(eval SWEEP_MTP_METHODS := $$(call sweep_default,--mtp))$(SWEEP_MTP_METHODS)
ifndef RUN_ID
RUN_ID := $(shell date +%Y%m%d-%H%M%S)
endif
# REPORT_ARGS: unset, `$(RUN_ID) --results /results --seal`.
REPORT_ARGS ?=
SUBMAKE = $(MAKE) --no-print-directory -f $(firstword $(MAKEFILE_LIST))

# The host-side helper (collector/specstack/host/), standard library only: the host's python3, no venv.
CONTAINERS_PY := PYTHONPATH=collector $(HOST_PYTHON) -m specstack.host
# The host-side helper talks to Docker through the same CLI as make, never through another client's default socket.
CONTAINERS_DOCKER = DOCKER='$(DOCKER)' $(CONTAINERS_PY)
# A make value as one shell word.
q = '$(subst ','\'',$(1))'
# $(call stack,STEP): the compose lifecycle (collector/specstack/host/lifecycle.py) with every knob of this file.
stack = $(CONTAINERS_DOCKER) compose $(1) PLATFORM=$(PLATFORM) DOCKER=$(call q,$(DOCKER)) SUBMAKE=$(call q,$(SUBMAKE)) \
	METHOD=$(call q,$(METHOD)) RUN_ID=$(call q,$(RUN_ID)) MODEL_SET=$(call q,$(MODEL_SET)) GPU=$(call q,$(GPU)) \
	CPUSET=$(call q,$(CPUSET)) GPUS=$(call q,$(GPUS)) CPUSETS=$(call q,$(CPUSETS)) CALIBRATE=$(call q,$(CALIBRATE)) \
	K=$(call q,$(K)) PREFIX_CACHING=$(call q,$(PREFIX_CACHING)) RUN_ARGS=$(call q,$(RUN_ARGS)) \
	REPORT_ARGS=$(call q,$(REPORT_ARGS)) IMAGES_LOCK=$(call q,$(IMAGES_LOCK)) GPU_FREE_MIB=$(call q,$(GPU_FREE_MIB)) \
	GPU_FREE_TIMEOUT=$(call q,$(GPU_FREE_TIMEOUT)) GPU_FREE_POLL=$(call q,$(GPU_FREE_POLL)) \
	$(if $(filter sweep,$(1)),SWEEP_METHODS=$(call q,$(SWEEP_METHODS) $(SWEEP_MTP_METHODS))) \
	$(if $(filter undefined,$(origin WAIT_TIMEOUT)),,WAIT_TIMEOUT=$(call q,$(WAIT_TIMEOUT)))
# Image references of the lock file (images.env.local, read after it, wins); images/images.mk builds their tags.
lock_ref = $(lastword $(foreach f,$(IMAGES_LOCK) $(wildcard images.env.local),$(shell sed -n 's/^$(1)=//p' $(f))))
# make lock: Grafana is optional on CPU (no image of it can be built here), so its line stays as it is.
ifeq ($(PLATFORM),cpu)
LOCK_KEYS ?= VLLM_IMAGE COLLECTOR_IMAGE PROMETHEUS_IMAGE
endif

include images/images.mk

.PHONY: run sweep down lock logs status compose-check-method compose-prepare _compose-method

## make run METHOD=ngram [PLATFORM=cpu MODEL_SET=tiny]: one method end to end; results in results/<RUN_ID>/
run:
	@$(call stack,run)

## make sweep: every method strictly one at a time on one GPU (or one CPU set), one RUN_ID;
## GPUS=0,1 (PLATFORM=cpu: CPUSETS=0,1): one method per slot at once, a queue for the rest, still one RUN_ID;
## SCHEDULER=slurm: one Slurm array task per method, native venv, no Docker (SLURM_ARGS="--partition gpu"; docs/slurm.md)
ifeq ($(SCHEDULER),slurm)
sweep:
	@test -x $(SPECSTACK) || { echo "make sweep SCHEDULER=slurm: no $(SPECSTACK); build it on the shared file system first: make venv PLATFORM=gpu (GPU nodes) or make venv (CPU)"; exit 2; }
	$(SPECSTACK) slurm submit --run-id $(call q,$(RUN_ID)) --methods "$$(echo $(SWEEP_METHODS) $(SWEEP_MTP_METHODS) | tr ' ' ,)" \
	  --run-args $(call q,--model-set $(MODEL_SET) --platform $(PLATFORM)-native $(if $(K),--k $(K)) $(if $(PREFIX_CACHING),--prefix-caching) $(RUN_ARGS)) $(SLURM_ARGS)
else
sweep:
	@$(call stack,sweep)
endif

# The pre-checks of make run (METHOD, WAIT_TIMEOUT, PREFIX_CACHING, Docker, Compose, the GPU host), alone.
compose-check-method:
	@$(call stack,check)

# The folders and the Grafana secret compose mounts, created by this user (never by a container, as root).
compose-prepare:
	@$(call stack,prepare)

# One method on an up stack (its server, collector, cleanup); `make -n _compose-method` prints its commands.
_compose-method:
	+@$(call stack,method)

## make down: stop and remove the containers; named volumes (models, caches, Prometheus, Grafana) stay
down:
	@$(call stack,down)

## make lock: pin the images of the lock file (IMAGES_LOCK) to their current digests (needs registry access)
lock:
	$(CONTAINERS_PY) lock --file $(IMAGES_LOCK) $(if $(LOCK_KEYS),--keys $(LOCK_KEYS))
	$(CONTAINERS_PY) check-lock --file $(IMAGES_LOCK)

## make logs [SERVICE=vllm-ngram]: follow the logs
logs:
	@$(call stack,logs) SERVICE=$(call q,$(SERVICE))

## make status: containers, health, GPU memory
status:
	@$(call stack,status)
