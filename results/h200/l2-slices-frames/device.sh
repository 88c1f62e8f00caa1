#!/usr/bin/env bash
# Slice maps of pages on other frames, SM 0; everything under $OUT, every step under timeout.
#   bash device.sh full   # every line set a slice can differ by (bits 8, 10..20) of two adjacent
#                         # pages, then of one page after 8 GiB held first (about 290 s)
#   bash device.sh grid   # every 4 KiB step (grid:12:20) of 16 adjacent pages, then of 8 pages
#                         # after 4 GiB held first (about 290 s)
set -u
B=target/gpu-bin/memscope
O=$OUT; T() { date +%s.%N; }; el() { python3 -c "print(round($(T)-$1,1))"; }
START=$(T)
{
timeout 10 nvidia-smi --query-gpu=name,serial,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv
CU=""; for d in /usr/local/cuda/extras/CUPTI/lib64 /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do ls $d/libcupti.so* >/dev/null 2>&1 && CU="$CU:$d"; done
export LD_LIBRARY_PATH="${CU#:}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
run() { # name pages timeout env...
  local name=$1 pages=$2 to=$3; shift 3; local s=$(T)
  env MEMSCOPE_SLICES_MAP_OFFSETS=bits:8+10-20 "$@" MEMSCOPE_SLICES_MAP=$pages MEMSCOPE_SLICES_MAP_SM=0 MEMSCOPE_SLICES_LINES=32 \
    MEMSCOPE_SLICES_KEEP=/tmp/$name/raw timeout $to $B run --target cuda:0 --probes l2.slices --out /tmp/$name --quiet > $O/$name.log 2>&1
  echo "$name rc $? $(el $s) s"
  [ -f /tmp/$name/raw/map.json ] && gzip -c /tmp/$name/raw/map.json > $O/$name-map.json.gz
  python3 -c "import json;d=json.load(open('/tmp/$name/raw/map.json'));print(d['summary'])" 2>&1 | tail -1
}
case "${1:-}" in
  full) run pair 2 300; run skip 1 190 MEMSCOPE_SLICES_SKIP_PAGES=4096 ;;
  grid) run grid16 16 300 MEMSCOPE_SLICES_MAP_OFFSETS=grid:12:20
        run skip8 8 200 MEMSCOPE_SLICES_MAP_OFFSETS=grid:12:20 MEMSCOPE_SLICES_SKIP_PAGES=2048 ;;
  *) echo "usage: device.sh full|grid" ;;
esac
echo "total $(el $START) s"
} > $O/log.txt 2>&1
cat $O/log.txt
