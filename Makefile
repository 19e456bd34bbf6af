# specstack: the entry points. `make demo` needs no GPU, no Docker and no downloads; `make test` also runs the
# compose stack (CPU form) on a Docker engine (.ci/run installs and starts what it needs).
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

venv: $(VENV)/.ready
LOCKS := $(wildcard collector/requirements*.lock)
$(VENV)/.ready: $(LOCKS) collector/setup_venv.sh collector/wheelhouse.sh collector/pyproject.toml
	bash collector/setup_venv.sh $(VENV)
	touch $@

## make wheelhouse: every locked distribution in .specstack/wheelhouse (the venv and the CPU images install from it)
.PHONY: wheelhouse
wheelhouse: venv

# Compose stack (GPU, or PLATFORM=cpu): run, sweep, down, lock, logs, status, images
include services/compose.mk

## make demo: tiny local models, every method on real vLLM (CPU), one table per task
demo: venv
	$(SPECSTACK) demo

## make test: every kind of test (markers in pyproject.toml): unit, config, integration on real vLLM + Prometheus,
## compose; `make unit` runs the fast ones (seconds)
test: venv dashboards-check
	$(PY) -m pytest -q --durations=30 tests

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
	@rc=0; $(CONTAINERS_DOCKER) reproduce-plan --run '$(RUN)' --run-id '$(REPRO_ID)' \
	  $(if $(METHODS),--methods '$(METHODS)') $(if $(ALLOW_DRIFT),--allow-drift) || rc=$$?; \
	case $$rc in \
	  0) . .specstack/reproduce/$(REPRO_ID).plan; \
	     $(SUBMAKE) _compose-reproduce PLATFORM=$$platform MODEL_SET=$$model_set PREFIX_CACHING=$$prefix_caching \
	       IMAGES_LOCK=$$images_lock REPRODUCE_OF=$$original REPRO_METHODS="$$methods" RUN_ID='$(REPRO_ID)' \
	       SPEED_TOLERANCE='$(SPEED_TOLERANCE)';; \
	  3) $(SUBMAKE) venv && $(SPECSTACK) reproduce "$(RUN)" $(if $(ALLOW_DRIFT),--allow-drift) \
	       $(if $(SPEED_TOLERANCE),--speed-tolerance $(SPEED_TOLERANCE)) \
	       $(if $(METHODS),--methods "$$(echo $(METHODS) | tr ' ' ,)");; \
	  *) exit $$rc;; esac

## make dashboards: grafana/dashboards/*.json generated from grafana/*.py (never hand-edited); make test checks them
.PHONY: dashboards dashboards-check
dashboards: venv
	$(PY) grafana/generate.py
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
