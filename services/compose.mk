# GPU stack targets (included by the top-level Makefile): run, sweep, down, lock, logs, status.
#
#   make run METHOD=ngram          one method: pre-flight, server + Prometheus + Grafana, collector, report
#   make sweep                     baseline ngram draft_model eagle3 suffix, then mtp-baseline mtp, one at a time
#   make down                      stop everything; volumes (model cache, compile cache, Prometheus) stay
#   make lock                      resolve every image tag in images.lock to its digest
#   make logs [SERVICE=vllm-ngram] / make status
#
# Knobs (make VAR=value): METHOD, RUN_ID (default: a timestamp; a sweep shares one), MODEL_SET (default),
# K (num_speculative_tokens override for the spec methods), GPU (device id or UUID, default 0),
# RUN_ARGS (extra `specstack run` options, e.g. "--concurrency 1,4,16 --repeats 3"), GPU_FREE_MIB,
# GPU_FREE_TIMEOUT, WAIT_TIMEOUT (seconds a server may take to become healthy).
# Environment: HF_TOKEN (passed to the servers as a compose secret), SPECSTACK_BIND_ADDRESS (default
# 127.0.0.1; 0.0.0.0 exposes the ports), VLLM_PORT / PROMETHEUS_PORT / GRAFANA_PORT.

DOCKER ?= docker
HOST_PYTHON ?= python3
MODEL_SET ?= default
GPU ?= 0
K ?=
RUN_ARGS ?=
GPU_FREE_MIB ?= 1024
GPU_FREE_TIMEOUT ?= 300
GPU_FREE_POLL ?= 2
WAIT_TIMEOUT ?= 3600
SWEEP_METHODS ?= baseline ngram draft_model eagle3 suffix
SWEEP_MTP_METHODS ?= mtp-baseline mtp
ifndef RUN_ID
RUN_ID := $(shell date +%Y%m%d-%H%M%S)
endif
REPORT_ARGS ?= $(RUN_ID) --results /results

# Method names = the [methods.NAME] tables of methods.toml (read with sed: the host may lack Python 3.11).
SPECSTACK_METHODS := $(shell sed -n 's/^\[methods\.\([^]]*\)\][[:space:]]*$$/\1/p' services/methods.toml)
SPECSTACK_TARGETS := .specstack/prometheus-targets/vllm.json
GRAFANA_SECRET := .specstack/secrets/grafana_admin_password
CONTAINERS_PY := $(HOST_PYTHON) collector/specstack/containers.py
# Methods with a speculative config: K applies to them only (plain decode has nothing to override).
SPECSTACK_SPEC_METHODS := $(shell awk '/^\[/ { m = "" } /^\[methods\./ { m = $$0; sub(/^\[methods\./, "", m); sub(/\].*/, "", m) } /^speculative-config[[:space:]]*=/ && m != "" { print m }' services/methods.toml)
SPEC_K = $(if $(filter $(METHOD),$(SPECSTACK_SPEC_METHODS)),$(K))
SPEC_OVERRIDE = $(if $(SPEC_K),{"num_speculative_tokens":$(SPEC_K)})
SUBMAKE = $(MAKE) --no-print-directory -f $(firstword $(MAKEFILE_LIST))

# Variables compose interpolates, set per command (never exported to the rest of the Makefile).
COMPOSE_VARS = HF_TOKEN="$${HF_TOKEN:-}" SPECSTACK_UID="$$(id -u)" SPECSTACK_GID="$$(id -g)" \
	SPECSTACK_GPU='$(GPU)' SPECSTACK_MODEL_SET='$(MODEL_SET)' SPECSTACK_SPEC_OVERRIDE='$(SPEC_OVERRIDE)'
COMPOSE = $(COMPOSE_VARS) $(DOCKER) compose -f compose.yaml --env-file images.lock \
	$(if $(wildcard images.env.local),--env-file images.env.local)
ALL_PROFILES = $(foreach m,$(SPECSTACK_METHODS),--profile $(m)) --profile tools

.PHONY: run sweep down lock logs status compose-prepare compose-check-method _compose-method _compose-report

compose-check-method:
	@if [ -z "$(METHOD)" ]; then echo "make run: set METHOD, one of: $(SPECSTACK_METHODS)" >&2; exit 2; fi
	@case " $(SPECSTACK_METHODS) " in *" $(METHOD) "*) ;; \
	  *) echo "make run: unknown METHOD '$(METHOD)'; choose one of: $(SPECSTACK_METHODS)" >&2; exit 2;; esac
	@$(DOCKER) compose version >/dev/null 2>&1 || { echo "docker compose (v2) is missing: install the Docker Compose plugin" >&2; exit 2; }

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

## make run METHOD=ngram: one method end to end; results in results/$(RUN_ID)/
run: compose-check-method compose-prepare
	$(COMPOSE) build collector $(if $(filter suffix,$(METHOD)),vllm-suffix)
	$(COMPOSE) up -d --wait prometheus grafana
	@rc=0; $(SUBMAKE) _compose-method METHOD=$(METHOD) RUN_ID=$(RUN_ID) || rc=$$?; \
	  $(SUBMAKE) _compose-report RUN_ID=$(RUN_ID) || { [ $$rc -ne 0 ] || rc=1; }; \
	  echo "results: results/$(RUN_ID)/   dashboards: http://127.0.0.1:$${GRAFANA_PORT:-3000} (admin, password in $(GRAFANA_SECRET))"; \
	  exit $$rc

## make sweep: every method strictly one at a time on one GPU, one RUN_ID
sweep: compose-prepare
	@$(SUBMAKE) compose-check-method METHOD=baseline
	$(COMPOSE) build collector vllm-suffix
	$(COMPOSE) up -d --wait prometheus grafana
	@failed=""; \
	for m in $(SWEEP_METHODS) $(SWEEP_MTP_METHODS); do \
	  echo "=== sweep $(RUN_ID): $$m ==="; \
	  $(SUBMAKE) _compose-method METHOD=$$m RUN_ID=$(RUN_ID) || failed="$$failed $$m"; \
	  $(CONTAINERS_PY) wait-gpu-free --gpu '$(GPU)' --max-used-mib $(GPU_FREE_MIB) --timeout $(GPU_FREE_TIMEOUT) \
	    --poll $(GPU_FREE_POLL) \
	    || { echo "sweep stopped: the GPU did not free up after $$m" >&2; failed="$$failed (stopped)"; break; }; \
	done; \
	$(SUBMAKE) _compose-report RUN_ID=$(RUN_ID) || failed="$$failed report"; \
	echo "results: results/$(RUN_ID)/   dashboards: http://127.0.0.1:$${GRAFANA_PORT:-3000}"; \
	if [ -n "$$failed" ]; then echo "sweep $(RUN_ID) failed:$$failed" >&2; exit 1; fi

# One method: pre-flight in the method's own image -> server up (healthy) -> host provenance ->
# collector -> server stopped. The server is stopped and the Prometheus target cleared on any exit.
_compose-method:
	@set -u; svc=vllm-$(METHOD); \
	cleanup() { $(COMPOSE) stop $$svc >/dev/null 2>&1 || true; \
	  $(CONTAINERS_PY) targets --out $(SPECSTACK_TARGETS) --clear || true; }; \
	trap cleanup EXIT; trap 'exit 130' INT TERM; \
	echo "--- $(METHOD): pre-flight (vLLM's own parser and config classes, in the server image)"; \
	$(COMPOSE) --profile $(METHOD) run --rm --no-deps \
	  -v "$(CURDIR)/collector/specstack:/opt/specstack/specstack:ro" -e PYTHONPATH=/opt/specstack \
	  -e SPECSTACK_SERVICES_DIR=/services \
	  --entrypoint python3 $$svc -m specstack.cli.preflight --method $(METHOD) --platform gpu-container \
	  --model-set $(MODEL_SET) || exit 2; \
	$(CONTAINERS_PY) targets --out $(SPECSTACK_TARGETS) --target $$svc:8000 \
	  --label method=$(METHOD) --label run_id=$(RUN_ID) || exit 1; \
	echo "--- $(METHOD): starting $$svc (first start downloads the model; waiting up to $(WAIT_TIMEOUT) s)"; \
	if ! $(COMPOSE) --profile $(METHOD) up -d --wait --wait-timeout $(WAIT_TIMEOUT) $$svc; then \
	  $(COMPOSE) logs --tail 60 $$svc >&2; echo "$$svc did not become healthy" >&2; exit 1; fi; \
	$(CONTAINERS_PY) record --run-id $(RUN_ID) --method $(METHOD) --results results \
	  || echo "warning: host provenance of $(METHOD) not recorded" >&2; \
	echo "--- $(METHOD): collector"; \
	$(COMPOSE) run --rm --use-aliases collector run --runtime url --url http://$$svc:8000 \
	  --method $(METHOD) --run-id $(RUN_ID) --results /results --model-set $(MODEL_SET) \
	  --platform gpu-container --windows-port 9400 --prometheus-url http://prometheus:9090 $(if $(SPEC_K),--k $(SPEC_K)) $(RUN_ARGS)

_compose-report:
	$(COMPOSE) run --rm collector report $(REPORT_ARGS)

## make down: stop and remove the containers; named volumes (models, caches, Prometheus, Grafana) stay
down:
	$(COMPOSE) $(ALL_PROFILES) down --remove-orphans
	@[ ! -f $(SPECSTACK_TARGETS) ] || echo '[]' > $(SPECSTACK_TARGETS)

## make lock: pin every image of images.lock to its current digest (needs registry access)
lock:
	$(CONTAINERS_PY) lock --file images.lock
	$(CONTAINERS_PY) check-lock --file images.lock

## make logs [SERVICE=vllm-ngram]: follow the logs
logs:
	$(COMPOSE) $(ALL_PROFILES) logs -f --tail 200 $(SERVICE)

## make status: containers, health, GPU memory
status:
	@$(COMPOSE) $(ALL_PROFILES) ps -a
	@command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=index,name,memory.used,memory.total,utilization.gpu --format=csv || echo "nvidia-smi not found on this host"
