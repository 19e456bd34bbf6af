#!/usr/bin/env bash
# Regenerate collector/requirements-gpu.lock: the native GPU environment (`make venv PLATFORM=gpu`) resolved
# from its direct needs below, for CPython 3.11 (the oldest the lock serves; every pin has cp312 wheels too,
# which `make wheelhouse PLATFORM=gpu GPU_PYTHON_VERSION=3.12` checks) on manylinux_2_35 x86_64, wheels only,
# every file's sha256. uv 0.13.9 (hash-pinned, x86_64 Linux) does the resolving, in a throw-away venv.
#   usage: collector/lock_gpu.sh [OUT]   (default collector/requirements-gpu.lock; review the diff, then commit)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${1:-$HERE/requirements-gpu.lock}
WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT
python3 -m venv "$WORK/uv"
echo 'uv==0.13.9 --hash=sha256:d7f459fe4fd247d830351c75686d3996ace3c6f3f728eb0e85a30b7ada0cef19' > "$WORK/uv.txt"
"$WORK/uv/bin/pip" install -q --disable-pip-version-check --require-hashes -r "$WORK/uv.txt"

# The direct needs: vLLM's CUDA build, what its server imports without declaring it, specstack's own needs
# (collector/pyproject.toml), the build backend of specstack and arctic-inference, and the GPU tests' runner.
cat > "$WORK/in.txt" <<'IN'
vllm==0.32.0
torchvision==0.28.0
jmespath
prometheus_client
requests
pandas
pyarrow
rich
matplotlib
psutil
pyyaml
docker
grafanalib
check-jsonschema
setuptools==78.1.1
pytest
IN
# torch 2.13.0 names nvidia-nccl-cu13 2.29.7, which PyPI does not carry; 2.32.3 has what torch binds
echo 'nvidia-nccl-cu13==2.32.3' > "$WORK/overrides.txt"
# uv reads the host's CA bundle (--native-tls), as pip does behind a TLS-inspecting proxy
"$WORK/uv/bin/uv" pip compile "$WORK/in.txt" --override "$WORK/overrides.txt" --python-version 3.11 \
  --python-platform x86_64-manylinux_2_35 --no-build --generate-hashes --native-tls --no-header --no-annotate \
  --index-url "${PIP_INDEX_URL:-https://pypi.org/simple}" -o "$WORK/resolved.txt" -q
{ sed -n '1,/^# - flashinfer-cubin/p;/^#   compiles its kernels/p' "$HERE/requirements-gpu.lock" | grep '^#'
  cat "$WORK/resolved.txt"; } > "$WORK/lock"
mv "$WORK/lock" "$OUT"
echo "$OUT: $(grep -c '^[a-z]' "$OUT") distributions"
