#!/bin/bash
# On the lent GPU machine, the call after the last part: unpack the venv of pack.sh, wrap it in a venv of this
# machine's Python 3.12, copy the checkout out of the synced folder, and start the stages detached (setsid: they
# outlive this call; poll.sh watches them). usage: launch.sh SECONDS [STREAMS]
#   STREAMS=1 (default): every stage one after another, one server on the GPU at a time.
#   STREAMS=2: two queues side by side, each server with gpu-memory-utilization 0.40 (recorded in its serve
#   arguments); faster, but speed figures then share the GPU, and a start can fail vLLM's memory profiling when
#   the other queue's server stops meanwhile ("Error in memory profiling", seen 2026-12-02).
# Edit STAGES_* below for what a session should run; each stage is one `make test-gpu` (RUN_ID = stage name).
set -uo pipefail
W=${W:-/root/sx}; V=$W/venv; SP=$V/lib/python3.12/site-packages; BUDGET=${1:-1200}; STREAMS=${2:-1}
STAGES_A=("gpu-native gpu-native baseline,ngram,draft_model,eagle3,suffix,mtp-baseline,mtp"
          "gpu-native-v2 gpu-native-v2 baseline,ngram,eagle3,draft_model,mtp-baseline,mtp"
          "gpu-native-eager gpu-native-eager baseline,ngram,suffix")
STAGES_B=()
mkdir -p $W/log $W/results $W/parts; date -u
pgrep -af "vllm serve|pytest" | grep -v pgrep && echo "LEFT-OVER PROCESSES ABOVE"
for p in .specstack/parts/*; do [ -e "$p" ] && mv "$p" $W/parts/; done
if [ ! -f $V/.unpacked ]; then
  t=$(date +%s)
  "$(python3 -c 'import sys; print(sys._base_executable)')" -m venv --without-pip $V || { echo "venv failed"; exit 1; }
  python3 -m zipfile -e $W/parts/zstandard-*.whl $W/zst
  unz() { PYTHONPATH=$W/zst python3 -c "import sys, zstandard; zstandard.ZstdDecompressor(max_window_size=2**27).copy_stream(sys.stdin.buffer, sys.stdout.buffer)"; }
  cat $W/parts/p?? | unz | tar -x -C $V --exclude='bin/python' --exclude='bin/python3' --exclude='bin/python3.12' \
    || { echo "unpack failed"; exit 1; }
  cat $W/parts/n?? | unz | tar -x -C $V || { echo "unpack of the CUDA libraries failed"; exit 1; }
  # console scripts name the CPU host's venv; the editable install points at its checkout
  grep -rlI '^#!/.*/bin/python' $V/bin | xargs -r sed -i "1s|^#!.*/bin/python[0-9.]*$|#!$V/bin/python|"
  rm -f $SP/__editable__.specstack-*.pth $SP/__editable___specstack_*_finder.py
  touch $V/.unpacked; echo "unpacked in $(( $(date +%s) - t )) s"
fi
rm -rf $W/repo; cp -a "$PWD" $W/repo; rm -rf $W/repo/.specstack/parts
echo $W/repo/collector > $SP/specstack-checkout.pth
ln -sfn $V $W/repo/.venv-gpu; touch $V/.ready-gpu
$V/bin/python -c "import torch, vllm; assert torch.cuda.is_available(); print('torch', torch.__version__, 'nccl', torch.cuda.nccl.version(), 'vllm', vllm.__version__, torch.cuda.get_device_name())" || exit 1
export SPECSTACK_TEST_MODELS=$W/models SPECSTACK_GPU_RESULTS=$W/results PYTHONUNBUFFERED=1 \
  PYTEST_ADDOPTS="-v -rfE --durations=15" W END=$(( $(date +%s) + BUDGET ))
if [ "$STREAMS" = 2 ]; then
  rm -rf $W/services; cp -r $W/repo/services $W/services
  sed -i 's/^gpu-memory-utilization = 0.85/gpu-memory-utilization = 0.40/' $W/services/methods.toml
  export SPECSTACK_SERVICES_DIR=$W/services
  STAGES_B=("${STAGES_A[@]:1}"); STAGES_A=("${STAGES_A[0]}")
fi
cd $W/repo
cat > $W/stage.sh <<'EOS'
#!/bin/bash
# stage NAME PLATFORM METHODS: one make test-gpu, cut at the shared deadline END
name=$1; left=$(( END - $(date +%s) )); [ $left -gt 30 ] || { echo "no time" > $W/log/$name.log; echo 124 > $W/log/$name.rc; exit 0; }
echo "$(date -u +%T) start ($left s left)" > $W/log/$name.log
SPECSTACK_GPU_PLATFORM=$2 SPECSTACK_GPU_METHODS=$3 SPECSTACK_GPU_RUN_ID=$name timeout -k 20 $left \
  make test-gpu VENV=.venv-gpu >> $W/log/$name.log 2>&1
echo $? > $W/log/$name.rc; echo "$(date -u +%T) end" >> $W/log/$name.log
EOS
chmod +x $W/stage.sh
queue() { for s in "$@"; do echo "$W/stage.sh $s;"; done; }
SPECSTACK_PORT_RANGE=20000-20999 setsid bash -c "
  timeout 300 .venv-gpu/bin/specstack probe-sampler --json $W/results/probe-sampler-cuda.json > $W/log/probe.log 2>&1
  echo \$? > $W/log/probe.rc; $(queue "${STAGES_A[@]}")" > $W/log/a.out 2>&1 < /dev/null &
[ ${#STAGES_B[@]} -gt 0 ] && SPECSTACK_PORT_RANGE=21000-21999 setsid bash -c "$(queue "${STAGES_B[@]}")" \
  > $W/log/b.out 2>&1 < /dev/null &
sleep 2; echo "started; deadline in $BUDGET s"; pgrep -af "stage.sh|probe-sampler" | head
