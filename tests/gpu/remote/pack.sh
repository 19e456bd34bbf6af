#!/bin/bash
# On the CPU host: the venv that `make venv PLATFORM=gpu VENV=.venv-gpu` built (Python 3.12: PYTHON=python3.12)
# as zstd parts small enough for one device call each (tests/gpu/remote/README.md).
#   usage: [MODELS=DIR] tests/gpu/remote/pack.sh [VENV] [OUT_DIR]
# MODELS=DIR: also the model folders built there with this venv (parts m??; the trained set:
# VENV/bin/specstack models build smollm2 --models-dir DIR), which launch.sh unpacks into the test models' folder.
set -euo pipefail
VENV=${1:-.venv-gpu}; OUT=${2:-.specstack/parts}
SP=lib/python3.12/site-packages
[ -d "$VENV/$SP/vllm" ] || { echo "no Python 3.12 GPU venv at $VENV: PYTHON=python3.12 make venv PLATFORM=gpu VENV=$VENV" >&2; exit 2; }
mkdir -p "$OUT"; rm -f "$OUT"/p?? "$OUT"/n?? "$OUT"/m??
# Left out: kernels for other chips or models than the tiny Qwen3/MiMo set on one Hopper GPU (CUTLASS DSL,
# TileLang, TokenSpeed, the video decoder) and the build-only cmake. Everything specstack itself imports stays
# (pyarrow: the report's parquet tables).
X=(); for e in 'nvidia_cutlass_dsl*' 'tokenspeed_triton*' 'tilelang*' PyNvVideoCodec 'pynvvideocodec*' 'cmake*' \
               nvidia/cu13 nvidia/cudnn nvidia/cusparselt nvidia/nvshmem nvidia/nccl; do X+=(--exclude="$SP/$e"); done
# Of the CUDA libraries, two nothing here loads (no library names them; torch's are its NEEDED entries): the
# multi-GPU cuSOLVER and NVRTC's alternative build, 214 MB
N=(--exclude="$SP/nvidia/cu13/lib/libcusolverMg.so.*" --exclude="$SP/nvidia/cu13/lib/libnvrtc.alt.so.*")
# 61,000,000 bytes a part: with the checkout (~3 MiB) under the 64 MiB a call carries
(cd "$VENV" && tar --exclude=__pycache__ "${X[@]}" -cf - lib bin) | zstd -q -T0 -3 --long=27 | split -b 61000000 -d -a 2 - "$OUT/p"
# The CUDA libraries of the lock (cuBLAS, cuDNN, cuSPARSELt, NVSHMEM, NCCL 2.32.3), an archive of their own
(cd "$VENV" && tar "${N[@]}" -cf - $SP/nvidia/cu13 $SP/nvidia/cudnn $SP/nvidia/cusparselt $SP/nvidia/nvshmem $SP/nvidia/nccl) \
  | zstd -q -T0 -3 --long=27 | split -b 61000000 -d -a 2 - "$OUT/n"
# The models: a self-draft repeats its target's embeddings and first layers, which a 1 GiB window finds again
# (-6: the trained set in 4 parts in 8 s; -19 saves one part and costs 20 minutes of a 2-core host)
if [ -n "${MODELS:-}" ]; then
  (cd "$MODELS" && tar --exclude=.build.lock -cf - .) | zstd -q -T0 -6 --long=30 | split -b 61000000 -d -a 2 - "$OUT/m"
fi
# The machine has no zstd binary: its Python decompresses with this wheel
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d "$OUT" zstandard==0.25.0
ls "$OUT" | wc -l; du -sh "$OUT"
