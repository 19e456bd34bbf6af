#!/bin/bash
# First call on the lent GPU machine: what the machine is, anything left over, and the carried part moved out of the
# checkout (files outside it stay while the machine is warm); the start time in $W/t0.
W=/root/sx; mkdir -p $W/parts $W/log
# the machine's start, from which the launch call sets its deadline (README: 1440 s after this call)
[ -s $W/t0 ] || date +%s > $W/t0
date -u; nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total,uuid --format=csv,noheader
pgrep -af "vllm|pytest|specstack" | grep -v pgrep && echo "LEFT-OVER PROCESSES ABOVE" || echo "no left-over vllm/pytest process"
python3 -c 'import sys; print(sys.version.split()[0], sys.executable, sys._base_executable)'
echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"; nproc; df -h /root | tail -1; command -v xz zstd nvcc
grep -o -m1 -w avx512f /proc/cpuinfo || echo "no avx512f"
for p in .specstack/parts/*; do mv "$p" $W/parts/; done; ls -l $W/parts
