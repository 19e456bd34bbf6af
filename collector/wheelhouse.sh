#!/usr/bin/env bash
# Fill a wheelhouse with every distribution the locks pin, so that `make venv` (and the CPU images) install
# offline from the same files (`pip install --no-index --find-links DIR`), never from whatever a cache holds.
# Idempotent: pip skips a file already in DIR. The arctic-inference sdist is added by setup_venv.sh, which
# has the torch and setuptools its metadata step imports.
#   usage: collector/wheelhouse.sh [DIR]    (default .specstack/wheelhouse; PYTHON picks the interpreter)
set -euo pipefail
WH=${1:-.specstack/wheelhouse}
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PYTHON:-python3}
mkdir -p "$WH"
quiet() { grep -v "^WARNING: Location" || true; }   # noise from pip configs that list missing folders

fail() {
  echo "collector/wheelhouse.sh: could not download $1 into $WH (pip's message above)." >&2
  echo "Fix: let pip reach PyPI$2, or point it at a mirror (PIP_INDEX_URL, PIP_FIND_LINKS), then run make venv again." >&2
  exit 1
}
download() { "$PY" -m pip download -q --disable-pip-version-check --no-deps -d "$WH" "$@" 2>&1 | quiet; }

download --only-binary :all: -r "$HERE/requirements.lock" -r "$HERE/requirements-build.lock" \
  || fail "the wheels of requirements.lock and requirements-build.lock" ""

# torch +cpu: a wheel folder your pip already knows (find-links) first, offline; else PyTorch's CPU index,
# which requirements-torch.lock names.
if ! "$PY" -m pip download -q --disable-pip-version-check --no-deps --no-index -d "$WH" \
     -r "$HERE/requirements-torch.lock" >/dev/null 2>&1; then
  download --only-binary :all: -r "$HERE/requirements-torch.lock" \
    || fail "torch (requirements-torch.lock)" " and https://download.pytorch.org/whl/cpu"
fi
echo "wheelhouse ready: $WH ($(find "$WH" -maxdepth 1 -name '*.whl' | wc -l) wheels)"
