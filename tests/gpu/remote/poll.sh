#!/bin/bash
# Watch the streams for up to SECONDS (or until all ended), then pack logs and results into $OUT.
W=/root/sx; T=${1:-520}; stop=$(( $(date +%s) + T ))
status() {
  echo "--- $(date -u +%T) GPU $(nvidia-smi --query-gpu=memory.used,utilization.gpu --format=csv,noheader)"
  [ -s $W/log/verdict.tsv ] && cat $W/log/verdict.tsv
  [ -s $W/log/verdict-plan.log ] && cat $W/log/verdict-plan.log
  for f in $W/log/*.log; do echo "$(basename $f .log) rc=$(cat ${f%.log}.rc 2>/dev/null || echo -): $(grep -aE 'PASSED|FAILED|ERROR|passed|failed|Error' $f | tail -1 | cut -c1-150)"; done
  ls $W/results 2>/dev/null | tr '\n' ' '; echo
}
while [ $(date +%s) -lt $stop ]; do
  pgrep -f "stage.sh|probe-sampler|verdict[0-9]*[.]sh" >/dev/null || break   # every stage ended (verdict.sh, verdict2.sh)
  sleep 30; status | tail -n +1 | head -12
done
status
mkdir -p $OUT; cd $W
tar -cf - log results --exclude='*.staging*' 2>/dev/null | xz -T0 -6 > $OUT/results.tar.xz
sz=$(stat -c %s $OUT/results.tar.xz); echo "results.tar.xz $sz bytes"
if [ $sz -gt 16000000 ]; then split -b 15000000 -d $OUT/results.tar.xz $OUT/results.tar.xz.; rm $OUT/results.tar.xz; fi
ls -l $OUT
