#!/bin/bash
# On the lent GPU machine, a stream of its own (launch.sh ... "script:tests/gpu/remote/verdict.sh"): the time to a
# verdict (#42). The trained set's baseline, ngram, draft_model and suffix, code and chat, c = 1, 4, 16, from
# `specstack sweep` to the report, twice: on the fresh machine (every cache cold: torch.compile's under the stream's
# VLLM_CACHE_ROOT, FlashInfer's JIT kernels), then again on the caches the first sweep left, as a user's next sweep
# on the same machine finds them. Each sweep's wall time goes to $W/log/verdict.tsv; its report holds the breakdown.
#   PROMPTS (default 32): prompts a task; the acceptance phase sends them SEQS at a time (launch.sh's max-num-seqs)
set -uo pipefail
cd "$W/repo"
PROMPTS=${PROMPTS:-32}
for label in cold warm; do
  left=$(( END - $(date +%s) )); [ $left -gt 60 ] || { echo "$label no-time 0" >> $W/log/verdict.tsv; break; }
  s=$(date +%s.%N)
  timeout -k 20 $left .venv-gpu/bin/specstack sweep --model-set smollm2 --platform gpu-native \
    --methods baseline,ngram,draft_model,suffix --tasks code,chat --num-prompts "$PROMPTS" --concurrency 1,4,16 \
    --repeats 1 --acceptance-concurrency "$SPECSTACK_GPU_CONCURRENCY" --run-id "verdict-$label" \
    --results "$W/results" --models-dir "$SPECSTACK_TEST_MODELS" > "$W/log/verdict-$label.log" 2>&1
  rc=$?
  echo "$label $rc $(python3 -c "import time; print(round(time.time() - $s, 1))")" >> $W/log/verdict.tsv
done
