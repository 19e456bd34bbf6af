#!/bin/bash
# On the lent GPU machine, a stream of its own (launch.sh ... "script:tests/gpu/remote/verdict2.sh"): #42's "before"
# and "after" at the same workload as verdict.sh (the trained set's baseline, ngram, draft_model and suffix, code and
# chat, c = 1, 4, 16, PROMPTS prompts a task), one after the other on one machine:
#   before: every torch.compile cache cold (the stream's empty VLLM_CACHE_ROOT), the acceptance phases one request
#           at a time (--acceptance-concurrency 1, as before #39/#42), --repeats 1: the harness as it ran the
#           recorded "before" (smol-h200, 2026-12-03), as far as options allow it now. FlashInfer's sampling
#           kernels are the ones launch.sh built while the venv unpacked (FLASHINFER_COLD=1: an empty
#           FLASHINFER_WORKSPACE_BASE instead, so the first server compiles them as the recorded "before" did)
#   after:  on the caches the first sweep left, acceptance SEQS in flight, --repeats 3: the intervals #42's "done
#           when" compares the two sweeps' figures with
# Each sweep's wall time goes to $W/log/verdict.tsv. The deadline is END (launch.sh), or the epoch second in
# $W/end when a poll wrote one (read when each sweep starts); the before is cut early enough to leave the after
# AFTER_RESERVE seconds (default 620), so the after is kept whole when both do not fit.
#   METHODS (default baseline,ngram,draft_model,suffix, in the order they run; BEFORE_METHODS and AFTER_METHODS:
#   one sweep's own list), SWEEPS (default "before after";
#   "after" alone: the 3-repeat sweep on whatever caches the machine has; "warm": the after's methods again, on the
#   caches the steps before it left, WARM_REPEATS (default 3) repeats, run id verdict-WARM_LABEL (default warm);
#   WARM_REPLICATE=sessions: each of its repeats a server session of its own, so that its intervals hold the
#   session-to-session variance a next sweep meets; "imports": a vLLM import's profile; "forked" and "spawned": the
#   after's methods and settings with the engine core forked (methods.toml) or spawned (the before's services
#   copy), each occurrence a run of its own (verdict-forked-1, verdict-spawned-1, ...), for an A/B of the fork on
#   one machine (SWEEPS="forked spawned forked spawned"); the steps run in the order given), AFTER_LABEL (default after),
#   AFTER_REPEATS (default 3), BEFORE_FRESH_CACHE=1 (the before on a torch.compile cache root of its own, empty,
#   so a before that runs after another sweep is still cold)
# Run 2026-12-06 night (docs/measured.md "#42 on a lent H100, 2026-12-06 night"): SWEEPS="after warm"
# AFTER_LABEL=cold1 AFTER_REPEATS=1 WARM_LABEL=warm3, both whole (519.4 s and 677.5 s).
# Run 2026-12-06 evening (docs/measured.md "#42 after, on a lent H100"): SWEEPS="after imports before"
# BEFORE_METHODS=ngram BEFORE_FRESH_CACHE=1 AFTER_RESERVE=0, the after whole in 831 s.
# Run 2026-12-04 (docs/measured.md "#42 before and after at 16 prompts"): the before on one machine (baseline and
# ngram; the machine went back mid-sweep), then SWEEPS=after AFTER_LABEL=after-r3 METHODS=baseline,ngram,suffix,
# draft_model on a fresh one (cold), cut at the deadline in suffix. Set END from the lease: the budget ends about
# budget_left_s (at first.sh's return) after $W/t0, not 1590 s after it.
set -uo pipefail
cd "$W/repo"
PROMPTS=${PROMPTS:-16}
METHODS=${METHODS:-baseline,ngram,draft_model,suffix}   # the order they run in
BEFORE_METHODS=${BEFORE_METHODS:-$METHODS}; AFTER_METHODS=${AFTER_METHODS:-$METHODS}   # one sweep's own list
SWEEPS=${SWEEPS:-before after}   # "after": the 3-repeat sweep alone, on whatever caches the machine has
deadline() { if [ -s "$W/end" ]; then cat "$W/end"; else echo "$END"; fi; }
sweep() {  # label methods acceptance-concurrency repeats reserve [VAR=VALUE ...]
  local label=$1 methods=$2 acc=$3 reps=$4 reserve=$5; shift 5
  local left=$(( $(deadline) - reserve - $(date +%s) ))
  [ $left -gt 60 ] || { echo "$label no-time 0" >> $W/log/verdict.tsv; return; }
  echo "$label start $(date -u +%T) cut-in ${left}s methods=$methods acc=$acc repeats=$reps ${SWEEP_EXTRA:-} $*" >> $W/log/verdict-plan.log
  local s; s=$(date +%s.%N)
  env "$@" timeout -k 20 $left .venv-gpu/bin/specstack sweep --model-set smollm2 --platform gpu-native \
    --methods "$methods" --tasks code,chat --num-prompts "$PROMPTS" --concurrency 1,4,16 \
    --repeats "$reps" --acceptance-concurrency "$acc" --run-id "verdict-$label" \
    --results "$W/results" --models-dir "$SPECSTACK_TEST_MODELS" ${SWEEP_EXTRA:-} > "$W/log/verdict-$label.log" 2>&1
  local rc=$?
  echo "$label $rc $(python3 -c "import time; print(round(time.time() - $s, 1))")" >> $W/log/verdict.tsv
}
fi_env=()
[ "${FLASHINFER_COLD:-0}" = 1 ] && { mkdir -p "$W/fi-cold"; fi_env=(FLASHINFER_WORKSPACE_BASE="$W/fi-cold"); }
# The before's servers spawn their engine core, as vLLM's CLI does when VLLM_WORKER_MULTIPROC_METHOD is unset and as
# the recorded "before" ran: its own copy of the services folder (as SERVE_DTYPE's copy) with methods.toml's fork
# (#42's cut, measured on 2026-12-06: docs/measured.md) set back to spawn
before_svc=$W/services-before; rm -rf "$before_svc"; cp -r "$SPECSTACK_SERVICES_DIR" "$before_svc"
sed -i 's/^VLLM_WORKER_MULTIPROC_METHOD = "fork"$/VLLM_WORKER_MULTIPROC_METHOD = "spawn"/' "$before_svc/methods.toml"
grep -qx 'VLLM_WORKER_MULTIPROC_METHOD = "spawn"' "$before_svc/methods.toml" \
  || { echo "no fork line in $before_svc/methods.toml to set to spawn" >> $W/log/verdict-plan.log; exit 2; }
imports() {  # where a vLLM import's seconds go on this machine: what every `vllm serve` imports before its first
  # log line (-X importtime, to $W/log/importtime-N.txt), twice timed (the second with the files in the page cache)
  [ $(( $(deadline) - $(date +%s) )) -gt 90 ] || { echo "imports no-time 0" >> $W/log/verdict.tsv; return; }
  local i s
  for i in 1 2; do
    s=$(date +%s.%N)
    timeout 40 .venv-gpu/bin/python -X importtime -c "import vllm.entrypoints.cli.main, vllm.entrypoints.openai.api_server" \
      2> "$W/log/importtime-$i.txt"
    echo "imports-$i $? $(python3 -c "import time; print(round(time.time() - $s, 1))")" >> $W/log/verdict.tsv
  done
  # and what the sweep's pre-flight imports, which a sweep pays once before its first server (19.4 s on the H100)
  s=$(date +%s.%N)
  timeout 60 .venv-gpu/bin/python -X importtime -m specstack.cli.preflight --method baseline --model-set smollm2 \
    --platform gpu-native --models-dir "$SPECSTACK_TEST_MODELS" > "$W/log/preflight.out" 2> "$W/log/importtime-preflight.txt"
  echo "imports-preflight $? $(python3 -c "import time; print(round(time.time() - $s, 1))")" >> $W/log/verdict.tsv
}
before_env=("${fi_env[@]}" SPECSTACK_SERVICES_DIR="$before_svc")
[ "${BEFORE_FRESH_CACHE:-0}" = 1 ] && { rm -rf "$W/vllm-cache/before"; before_env+=(VLLM_CACHE_ROOT="$W/vllm-cache/before"); }
declare -A seen=()
for step in $SWEEPS; do  # in the order given
  case $step in
    before) sweep before "$BEFORE_METHODS" 1 1 "${AFTER_RESERVE:-620}" "${before_env[@]}";;
    after) sweep "${AFTER_LABEL:-after}" "$AFTER_METHODS" "$SPECSTACK_GPU_CONCURRENCY" "${AFTER_REPEATS:-3}" 0;;
    warm) SWEEP_EXTRA="${WARM_REPLICATE:+--replicate $WARM_REPLICATE}" sweep "${WARM_LABEL:-warm}" "$AFTER_METHODS" "$SPECSTACK_GPU_CONCURRENCY" "${WARM_REPEATS:-3}" 0;;
    forked|spawned)  # the after's settings with the engine core forked (methods.toml) or spawned (the before's
      # services copy): a same-machine A/B of the fork, each occurrence its own run id (forked-1, spawned-1, ...)
      n=$(( ${seen[$step]:-0} + 1 )); seen[$step]=$n
      env_=(); [ $step = spawned ] && env_=(SPECSTACK_SERVICES_DIR="$before_svc")
      sweep "$step-$n" "$AFTER_METHODS" "$SPECSTACK_GPU_CONCURRENCY" "${AFTER_REPEATS:-3}" 0 "${env_[@]}";;
    imports) imports;;
    *) echo "unknown step $step" >> $W/log/verdict-plan.log;;
  esac
done
