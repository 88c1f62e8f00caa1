#!/usr/bin/env bash
# Next device session: l2.slices.function (first page full, 400 probe lines on 7 more; l2.slices
# runs first) and the GPU tests. Build here first: scripts/gpu-test.sh --build (also strips
# memscope into target/gpu-bin). carry ["target/gpu-bin", ".devcarry"]. Everything under $OUT.
# Expect ~4 min for the probe (map estimated 170 s) + the GPU tests (~3 min).
set -u
B=target/gpu-bin/memscope
CU=""; for d in /usr/local/cuda/extras/CUPTI/lib64 /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do ls $d/libcupti.so* >/dev/null 2>&1 && CU="$CU:$d"; done
export LD_LIBRARY_PATH="${CU#:}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
timeout 10 nvidia-smi --query-gpu=name,serial,driver_version,clocks.sm --format=csv | tee $OUT/gpu.csv
rm -rf /tmp/fr; mkdir -p /tmp/fr/raw
s=$(date +%s.%N)
MEMSCOPE_SLICES_KEEP=/tmp/fr/raw timeout 540 $B run --target cuda:0 --probes l2.slices.function --out /tmp/fr --quiet > $OUT/run.log 2>&1
echo "rc $? $(python3 -c "import time;print(round(time.time()-$s,1))") s" | tee -a $OUT/summary.txt
timeout 60 gzip -c /tmp/fr/results.json > $OUT/results.json.gz
timeout 60 gzip -c /tmp/fr/raw/map.json > $OUT/map.json.gz
timeout 60 python3 - >> $OUT/summary.txt <<'PY'
import json
d=json.load(open('/tmp/fr/results.json'))['findings']
for k in ('l2.slices.held_out_accuracy','l2.slices.frame_held_out_accuracy','l2.slices.function.probe_seconds','l2.slices.probe_seconds'):
    f=d.get(k,{}); print(k,'=',f.get('value'),f.get('confidence')); print('   note:',str(f.get('note'))[:1500])
f=d.get('l2.slices.function',{}); v=f.get('value') or {}
print('l2.slices.function confidence', f.get('confidence'))
print('frame:', json.dumps((v.get('function') or {}).get('frame')))
print('share (frame 0):', json.dumps((v.get('function') or {}).get('share')))
print('terms:', json.dumps((v.get('function') or {}).get('terms')))
print('shares:', json.dumps(v.get('shares'))[:1500])
print('note:', str(f.get('note'))[:3000])
m=json.load(open('/tmp/fr/raw/map.json')); print('map seconds', m.get('seconds'), '|', m.get('summary'))
PY
if [ "${GPUTEST:-1}" = 1 ]; then timeout 400 bash scripts/gpu-test.sh > $OUT/gpu-test.log 2>&1; echo "gpu-test rc $?" >> $OUT/summary.txt; tail -5 $OUT/gpu-test.log >> $OUT/summary.txt; fi
