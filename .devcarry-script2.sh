#!/usr/bin/env bash
# Second call: the slice labels of every line of one 2 MiB page that can differ (bits 7 and 9
# never change the slice on the H200: results/h200/l2-slices-grid), 4096 offsets (bits 8 and
# 10..20), from SM 0, one page. Run from the repo root; the binary is target/gpu-bin/memscope
# (cargo build --release -p memscope of branch slices2; the same binary as the first call works).
# Everything under $OUT/f; every step under timeout; about 120 s expected, 200 s at most.
set -u
B=target/gpu-bin/memscope
O=$OUT/f; mkdir -p $O
START=$(date +%s.%N)
T() { date +%s.%N; }
el() { python3 -c "print(round($(T)-$1,1))"; }
{
timeout 10 nvidia-smi --query-gpu=name,serial,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv
CU=""; for d in /usr/local/cuda/extras/CUPTI/lib64 /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do ls $d/libcupti.so* >/dev/null 2>&1 && CU="$CU:$d"; done
export LD_LIBRARY_PATH="${CU#:}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
s=$(T)
MEMSCOPE_SLICES_MAP=1 MEMSCOPE_SLICES_MAP_SM=0 MEMSCOPE_SLICES_LINES=32 MEMSCOPE_SLICES_MAP_OFFSETS=bits:8+10-20 \
  MEMSCOPE_SLICES_KEEP=/tmp/full/raw timeout 195 $B run --target cuda:0 --probes l2.slices --out /tmp/full --quiet \
  > $O/full.log 2>&1
echo "full rc $? $(el $s) s"
[ -f /tmp/full/raw/map.json ] && gzip -c /tmp/full/raw/map.json > $O/full-map.json.gz
python3 -c "import json;d=json.load(open('/tmp/full/raw/map.json'));print(d['summary'])" 2>&1 | tail -1
echo "total $(el $START) s"
} > $O/log.txt 2>&1
cat $O/log.txt
