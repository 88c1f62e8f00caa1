#!/usr/bin/env bash
# The H200's slice labels for a fit of the slice function within a partition: dense grids of
# offsets (G = every line of offsets 0..64 KiB, bits 7..15, and every 4 KiB step of the page,
# bits 12..20: 1008 offsets a page), from SM 0 over 2 adjacent pages twice (two processes: the
# repeat); then bits 7..11 with 16..20 (1024 offsets) over 1 page from SM 0; then G over 1 page
# from SM 2 (the other L2 partition), with what is left of the time. Run from the repo root; the
# binary is target/gpu-bin/memscope (cargo build --release -p memscope of branch slices2).
# Everything under $OUT/m; every step under timeout; about 190 s expected, 240 s at most.
set -u
B=target/gpu-bin/memscope
O=$OUT/m; mkdir -p $O
START=$(date +%s.%N)
T() { date +%s.%N; }
el() { python3 -c "print(round($(T)-$1,1))"; }
left() { python3 -c "print(int($1 - ($(T) - $START)))"; }
{
timeout 10 nvidia-smi --query-gpu=name,serial,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv
CU=""; for d in /usr/local/cuda/extras/CUPTI/lib64 /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do ls $d/libcupti.so* >/dev/null 2>&1 && CU="$CU:$d"; done
echo "cupti dirs: $CU"
export LD_LIBRARY_PATH="${CU#:}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
run() { # name, timeout (capped by what is left of 236 s), offsets, env...
  local name=$1 to=$2 offs=$3; shift 3
  local l=$(left 236); [ $l -lt $to ] && to=$l
  [ $to -lt 10 ] && { echo "$name skipped (time)"; return; }
  local s=$(T)
  env "$@" MEMSCOPE_SLICES_LINES=32 MEMSCOPE_SLICES_MAP_OFFSETS=$offs \
    MEMSCOPE_SLICES_KEEP=$O/$name/raw timeout $to $B run --target cuda:0 --probes l2.slices --out $O/$name --quiet \
    > $O/$name.log 2>&1
  echo "$name rc $? $(el $s) s (cap $to s)"
  [ -f $O/$name/raw/map.json ] && gzip -c $O/$name/raw/map.json > $O/$name-map.json.gz
  python3 -c "import json;d=json.load(open('$O/$name/raw/map.json'));print(d['summary'])" 2>&1 | tail -1
}
G=grid:7:15,grid:12:20
run sm0a 80 $G MEMSCOPE_SLICES_MAP=2 MEMSCOPE_SLICES_MAP_SM=0
run sm0b 75 $G MEMSCOPE_SLICES_MAP=2 MEMSCOPE_SLICES_MAP_SM=0
run sm0c 45 bits:7-11+16-20 MEMSCOPE_SLICES_MAP=1 MEMSCOPE_SLICES_MAP_SM=0
run sm2 45 $G MEMSCOPE_SLICES_MAP=1 MEMSCOPE_SLICES_MAP_SM=2
for f in $O/*/raw/*_stdout.txt $O/*/raw/plan.json $O/*/raw/counters.csv $O/*/results.json $O/*/raw/map.json; do [ -f $f ] && gzip -q $f; done
echo "total $(el $START) s"
} > $O/log.txt 2>&1
cat $O/log.txt
