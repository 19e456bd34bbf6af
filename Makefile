# specstack: the entry points. `make demo` and `make test` need no GPU, no Docker and no downloads.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
SPECSTACK := $(VENV)/bin/specstack

.PHONY: venv demo test unit integration
venv: $(VENV)/.ready
LOCKS := $(wildcard collector/requirements*.lock)
$(VENV)/.ready: $(LOCKS) collector/setup_venv.sh collector/wheelhouse.sh collector/pyproject.toml
	bash collector/setup_venv.sh $(VENV)
	touch $@

## make wheelhouse: every locked distribution in .specstack/wheelhouse (the venv and the CPU images install from it)
.PHONY: wheelhouse
wheelhouse: venv

# GPU stack (Docker Compose): run, sweep, down, lock, logs, status
include services/compose.mk

## make demo: tiny local models, every method on real vLLM (CPU), one table per task
demo: venv
	$(SPECSTACK) demo

## make test: unit tests, checks, and integration tests on real vLLM + Prometheus
test: venv dashboards-check
	$(PY) -m pytest -q tests

## dashboards generated from grafana/*.py (never hand-edited); the check runs inside make test
.PHONY: dashboards dashboards-check
dashboards: venv
	$(PY) grafana/generate.py
dashboards-check: venv
	$(PY) grafana/generate.py --check

## make bench-harness: what measuring costs (monitoring CPU, harness overhead, start-up, collector scale)
.PHONY: bench-harness bench-load
bench-harness: venv
	$(SPECSTACK) bench-harness --out results/bench-harness.json

## make bench-load: the collector under load (1,000 acceptance requests, a 20-minute bench window, a 5 MB /metrics)
bench-load: venv
	$(SPECSTACK) bench-load --out results/bench-load.json
