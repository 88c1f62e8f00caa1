#!/usr/bin/env bash
# The frame's share of the slice within a partition (docs/L2_SLICES.md, "A residue modulo 47
# fits"): slice labels of 256 random offsets in each of 16 adjacent 2 MiB pages of one allocation
# from SM 0 (4096 lines, about 100 s; the full page's map of 4096 lines took 98 s), then a
# second process with the same 256 offsets in each of 8 pages (the map allocates no unused pages first,
# so both processes may get the same frames: the second then repeats the first 8).
# Run from the repo root on the GPU machine: bash notes/diagnostics/device/l2-slice-pages.sh BIN
# (BIN: a memscope binary of this branch, cargo build --release -p memscope). Everything under
# $OUT/p; every step under timeout; 240 s at most. Then here:
#   cargo run --release -p memscope-cuda --example l2_slice_fit -- \
#     results/h200/l2-slices-grid/full-map.json.gz OUT/p/pages16-map.json.gz OUT/p/pages8-map.json.gz
# and read "across" (train full-map): held-out accuracy and each page's share (flips, constant,
# partition) against its page index.
set -u
B=${1:-target/gpu-bin/memscope}
O=$OUT/p; mkdir -p $O
START=$(date +%s)
left() { echo $(( $1 - ($(date +%s) - START) )); }
{
timeout 10 nvidia-smi --query-gpu=name,serial,driver_version,clocks.sm,clocks.mem --format=csv
CU=""; for d in /usr/local/cuda/extras/CUPTI/lib64 /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do ls $d/libcupti.so* >/dev/null 2>&1 && CU="$CU:$d"; done
export LD_LIBRARY_PATH="${CU#:}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
run() { # name, timeout (capped by what is left of 236 s), offsets, pages
  local name=$1 to=$2 offs=$3 pages=$4
  local l=$(left 236); [ $l -lt $to ] && to=$l
  [ $to -lt 10 ] && { echo "$name skipped (time)"; return; }
  local s=$(date +%s)
  MEMSCOPE_SLICES_LINES=32 MEMSCOPE_SLICES_MAP=$pages MEMSCOPE_SLICES_MAP_OFFSETS=$offs MEMSCOPE_SLICES_MAP_SM=0 \
    MEMSCOPE_SLICES_KEEP=$O/$name/raw timeout $to $B run --target cuda:0 --probes l2.slices --out $O/$name --quiet \
    > $O/$name.log 2>&1
  echo "$name rc $? $(( $(date +%s) - s )) s (cap $to s)"
  [ -f $O/$name/raw/map.json ] && gzip -c $O/$name/raw/map.json > $O/$name-map.json.gz
}
run pages16 130 random:256 16
run pages8 100 random:256 8
echo "total $(( $(date +%s) - START )) s"
} > $O/log.txt 2>&1
cat $O/log.txt
