#!/bin/bash
# On the lent GPU machine, the call after the last part: unpack the venv of pack.sh, wrap it in a venv of this
# machine's Python 3.12, copy the checkout out of the synced folder, and start the streams detached (setsid: they
# outlive this call; poll.sh watches them).
#   usage: launch.sh SECONDS STREAM [STREAM ...]
#   STREAM: "STAGE[;STAGE ...]", STAGE: "NAME PLATFORM METHODS [VAR=VALUE ...]" or "script:PATH" (a script of the
#   checkout, run with W, END and the servers' settings in its environment: verdict.sh) (e.g. SPECSTACK_GPU_CACHED=all;
#   SERVE_DTYPE=float32: that stage's servers in float32, recorded in each summary's serve arguments)
# Each stage is one `make test-gpu` (RUN_ID = NAME, the VAR=VALUE words in its environment); the stages of a stream run one after another, the streams side
# by side, all cut at the shared deadline SECONDS from now. PROBE=1 runs `specstack probe-sampler` first.
# One stream: every server with methods.toml's own memory settings. Several: the GPU is shared, so every server
# gets gpu-memory-utilization 0.8/N and a fixed KV cache (kv-cache-memory-bytes, 8 GiB), which skips vLLM's memory
# profiling: a profile taken while another stream's server starts or stops fails ("Error in memory profiling",
# seen 2026-12-02). Both land in each summary's serve arguments; speed figures of such a run share the GPU.
# SEQS=N (default 64): max-num-seqs N for every server and N requests in flight in the acceptance and sampled
# phases (1024 samples a prompt at 16 in flight took 2-4 min a method); bench's concurrencies stay 1, 4, 16.
# Each stream has its own vLLM cache root (torch.compile), so its cached second start reads only its own.
# Carried model parts (m??, pack.sh MODELS=...: the trained set built on the CPU host with this venv) are unpacked
# into the models folder, where its builder finds its stamp and builds nothing. FlashInfer's sampling kernels, which
# the first server of a fresh machine spends about two minutes compiling (docs/gpu.md), are built in the background
# as soon as the venv is there; the server waits on FlashInfer's lock for what is not done and loads the rest.
set -uo pipefail
W=${W:-/root/sx}; V=$W/venv; SP=$V/lib/python3.12/site-packages; BUDGET=${1:?seconds}; shift
END=$(( $(date +%s) + BUDGET ))   # SECONDS from this call's start, unpacking included
[ $# -ge 1 ] || { echo "usage: launch.sh SECONDS STREAM [STREAM ...]" >&2; exit 2; }
mkdir -p $W/log $W/results $W/parts; date -u
pgrep -af "vllm serve|pytest" | grep -v pgrep && echo "LEFT-OVER PROCESSES ABOVE"
for p in .specstack/parts/*; do [ -e "$p" ] && mv "$p" $W/parts/; done
[ -d $W/zst ] || python3 -m zipfile -e $W/parts/zstandard-*.whl $W/zst
# pack.sh's archives: zstd with long-distance matching (a window up to 2 GiB: the models' archive)
unz() { PYTHONPATH=$W/zst python3 -c "import sys, zstandard; zstandard.ZstdDecompressor(max_window_size=2**31).copy_stream(sys.stdin.buffer, sys.stdout.buffer)"; }
if [ ! -f $V/.unpacked ]; then
  t=$(date +%s)
  "$(python3 -c 'import sys; print(sys._base_executable)')" -m venv --without-pip $V || { echo "venv failed"; exit 1; }
  cat $W/parts/p?? | unz | tar -x -C $V --exclude='bin/python' --exclude='bin/python3' --exclude='bin/python3.12' \
    || { echo "unpack failed"; exit 1; }
  cat $W/parts/n?? | unz | tar -x -C $V || { echo "unpack of the CUDA libraries failed"; exit 1; }
  # console scripts name the CPU host's venv; the editable install points at its checkout
  grep -rlI '^#!/.*/bin/python' $V/bin | xargs -r sed -i "1s|^#!.*/bin/python[0-9.]*$|#!$V/bin/python|"
  rm -f $SP/__editable__.specstack-*.pth $SP/__editable___specstack_*_finder.py
  touch $V/.unpacked; echo "unpacked in $(( $(date +%s) - t )) s"
fi
# FlashInfer's JIT kernels go to $FLASHINFER_WORKSPACE_BASE/.cache/flashinfer (default the home folder), as the servers'
setsid bash -c "$V/bin/python -c 'from flashinfer.sampling import get_sampling_module; get_sampling_module()'; \
  echo \$? > $W/log/flashinfer-prebuild.rc" > $W/log/flashinfer-prebuild.log 2>&1 < /dev/null &
rm -rf $W/repo; cp -a "$PWD" $W/repo; rm -rf $W/repo/.specstack/parts
echo $W/repo/collector > $SP/specstack-checkout.pth
ln -sfn $V $W/repo/.venv-gpu; touch $V/.ready-gpu
$V/bin/python -c "import torch, vllm; assert torch.cuda.is_available(); print('torch', torch.__version__, 'nccl', torch.cuda.nccl.version(), 'vllm', vllm.__version__, torch.cuda.get_device_name())" || exit 1
export SPECSTACK_TEST_MODELS=$W/models SPECSTACK_GPU_RESULTS=$W/results PYTHONUNBUFFERED=1 \
  PYTEST_ADDOPTS="-v -rfE --durations=15" W END
SEQS=${SEQS:-64}; export SPECSTACK_GPU_CONCURRENCY=$SEQS
rm -rf $W/services; cp -r $W/repo/services $W/services; export SPECSTACK_SERVICES_DIR=$W/services
sed -i "s/^max-num-seqs = 16$/max-num-seqs = $SEQS/" $W/services/methods.toml
if [ $# -gt 1 ]; then
  util=$(python3 -c "print(round(0.8 / $#, 2))")
  sed -i "s/^gpu-memory-utilization = 0.85/gpu-memory-utilization = $util\nkv-cache-memory-bytes = 8589934592/" \
    $W/services/methods.toml
fi
grep -nE "^(max-num-seqs|gpu-memory-utilization|kv-cache-memory-bytes)" $W/services/methods.toml
cd $W/repo
# The test models are built once, before the streams, so no two streams build them at once
mkdir -p $W/models
if compgen -G "$W/parts/m??" > /dev/null; then
  cat $W/parts/m?? | unz | tar -x -C $W/models || { echo "unpack of the carried models failed"; exit 1; }
  ls $W/models
fi
 HF_HUB_OFFLINE=1 .venv-gpu/bin/python -c "import sys; from pathlib import Path; from specstack.fixtures import tiny_models; tiny_models.build_all(Path(sys.argv[1]))" $W/models || exit 1
cat > $W/stage.sh <<'EOS'
#!/bin/bash
# stage NAME PLATFORM METHODS [VAR=VALUE ...]: one make test-gpu, cut at the shared deadline END
name=$1; left=$(( END - $(date +%s) )); [ $left -gt 30 ] || { echo "no time" > $W/log/$name.log; echo 124 > $W/log/$name.rc; exit 0; }
echo "$(date -u +%T) start ($left s left)" > $W/log/$name.log
echo "environment: ${*:4}" >> $W/log/$name.log
# SERVE_DTYPE=X: this stage's servers compute in dtype X (e.g. float32), from its own copy of the services folder
# (methods.toml's [common] dtype is specstack's one place for it; the copy keeps the memory settings above)
svc=$SPECSTACK_SERVICES_DIR
for a in "${@:4}"; do
  case $a in SERVE_DTYPE=*)
    svc=$W/services-$name; rm -rf $svc; cp -r $SPECSTACK_SERVICES_DIR $svc
    sed -i "s/^dtype = .*/dtype = \"${a#SERVE_DTYPE=}\"/" $svc/methods.toml
    grep -x "dtype = \"${a#SERVE_DTYPE=}\"" $svc/methods.toml >> $W/log/$name.log \
      || { echo "SERVE_DTYPE: no dtype line in $svc/methods.toml" >> $W/log/$name.log; echo 2 > $W/log/$name.rc; exit 0; };;
  esac
done
env "${@:4}" SPECSTACK_SERVICES_DIR=$svc SPECSTACK_GPU_PLATFORM=$2 SPECSTACK_GPU_METHODS=$3 SPECSTACK_GPU_RUN_ID=$name timeout -k 20 $left \
  make test-gpu VENV=.venv-gpu >> $W/log/$name.log 2>&1
echo $? > $W/log/$name.rc; echo "$(date -u +%T) end" >> $W/log/$name.log
EOS
chmod +x $W/stage.sh
i=0
for stream in "$@"; do
  cmds=""; IFS=';' read -ra stages <<< "$stream"
  for s in "${stages[@]}"; do
    case $s in script:*) cmds+="bash $W/repo/${s#script:}; ";;   # a script of the checkout (verdict.sh)
               *) cmds+="$W/stage.sh $s; ";; esac
  done
  [ $i = 0 ] && [ "${PROBE:-0}" = 1 ] && cmds="timeout 300 .venv-gpu/bin/specstack probe-sampler --json $W/results/probe-sampler-cuda.json > $W/log/probe.log 2>&1; echo \$? > $W/log/probe.rc; $cmds"
  VLLM_CACHE_ROOT=$W/vllm-cache/stream$i SPECSTACK_PORT_RANGE=$((20000 + 1000 * i))-$((20999 + 1000 * i)) setsid bash -c "$cmds" > $W/log/stream$i.out 2>&1 < /dev/null &
  i=$((i + 1)); sleep 1
done
sleep 2; echo "started $i streams; deadline in $BUDGET s"; pgrep -af "stage.sh|probe-sampler" | head -20
