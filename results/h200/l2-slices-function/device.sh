#!/usr/bin/env bash
# l2.slices with a full-page slice map on another frame (1024 pages held first): the residue
# fit's l2.slices.function and l2.slices.held_out_accuracy. Everything under $OUT.
set -u
B=target/gpu-bin/memscope
CU=""; for d in /usr/local/cuda/extras/CUPTI/lib64 /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do ls $d/libcupti.so* >/dev/null 2>&1 && CU="$CU:$d"; done
export LD_LIBRARY_PATH="${CU#:}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
timeout 10 nvidia-smi --query-gpu=name,serial,driver_version,clocks.sm --format=csv
s=$(date +%s.%N)
MEMSCOPE_SLICES_MAP=1 MEMSCOPE_SLICES_MAP_OFFSETS=bits:8+10-20 MEMSCOPE_SLICES_SKIP_PAGES=1024 MEMSCOPE_SLICES_KEEP=/tmp/fn/raw \
  timeout 170 $B run --target cuda:0 --probes l2.slices --out /tmp/fn --quiet > $OUT/run.log 2>&1
echo "rc $? $(python3 -c "import time;print(round(time.time()-$s,1))") s"
gzip -c /tmp/fn/results.json > $OUT/results.json.gz; gzip -c /tmp/fn/raw/map.json > $OUT/map.json.gz
python3 - <<'PY'
import json; d=json.load(open('/tmp/fn/results.json'))['findings']
for k in ('l2.slices.function','l2.slices.held_out_accuracy','l2.slices.timing_check','l2.slices.probe_seconds'):
    f=d.get(k,{}); print(k, '=', str(f.get('value'))[:400]); print('   note:', str(f.get('note'))[:600])
PY
