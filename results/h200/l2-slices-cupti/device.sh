#!/usr/bin/env bash
# l2.slices on the H200 with CUPTI in the child (the default now) against Nsight Compute (the old
# default), both designs on one page, --quick, 512 lines of one page, the GPU test of the child.
# Everything under $OUT/s, packed as slices.tgz.
set -u
D=.devcarry/slices; B=$D/memscope
O=$OUT/s; mkdir -p $O
START=$(date +%s.%N)
export PATH=$PATH:/usr/local/cuda/bin
T() { date +%s.%N; }
el() { python3 -c "print(round($(T)-$1,2))"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > $O/nvidia-smi.txt 2>&1
ncu --version > $O/ncu-version.txt 2>&1
ls -la /usr/local/cuda/extras/CUPTI/lib64/ /usr/local/cuda/lib64/libcupti* /usr/local/cuda/targets/x86_64-linux/lib/libcupti* > $O/cupti-libs.txt 2>&1
CU=""; for d in /usr/local/cuda/extras/CUPTI/lib64 /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do ls $d/libcupti.so* >/dev/null 2>&1 && CU="$CU:$d"; done
echo "cupti dirs: $CU"
s=$(T); LD_LIBRARY_PATH="${CU#:}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" timeout 30 $D/gpu_slices --include-ignored --nocapture --test-threads=1 > $O/gpu_slices.log 2>&1; echo "gpu_slices rc $? $(el $s) s"; tail -3 $O/gpu_slices.log
left() { python3 -c "print(int($1 - ($(T) - $START)))"; }
run() { # name, timeout, env... (the timeout capped by what is left of 160 s)
  local name=$1 to=$2; shift 2
  local l=$(left 160); [ $l -lt $to ] && to=$l
  [ $to -lt 5 ] && { echo "$name skipped (time)"; return; }
  s=$(T); env "$@" MEMSCOPE_SLICES_KEEP=$O/$name/raw timeout $to $B run --target cuda:0 --probes l2.slices --out $O/$name --quiet > $O/$name.log 2>&1
  echo "$name rc $? $(el $s) s"
}
run cupti1 30
run ncu1 40 MEMSCOPE_SLICES_COUNTERS=ncu
run cupti2 30
run both 40 MEMSCOPE_SLICES_DESIGN=both
s=$(T); MEMSCOPE_SLICES_KEEP=$O/quick/raw timeout 25 $B run --quick --target cuda:0 --probes l2.slices --out $O/quick --quiet > $O/quick.log 2>&1; echo "quick rc $? $(el $s) s"
run ncu2 40 MEMSCOPE_SLICES_COUNTERS=ncu
run cupti3 30
[ $(left 120) -gt 15 ] && run lines512 $(left 120) MEMSCOPE_SLICES_LINES=512
[ $(left 140) -gt 10 ] && run map16 $(left 140) MEMSCOPE_SLICES_MAP=16
[ $(left 158) -gt 10 ] && run map64 $(left 158) MEMSCOPE_SLICES_MAP=64
for n in map16 map64; do [ -f $O/$n/raw/map.json ] && cp $O/$n/raw/map.json $O/$n-map.json; done
python3 $D/summary.py $O > $O/summary.txt 2>&1; cat $O/summary.txt | head -120
for f in $O/*/raw/*_stdout.txt $O/*/raw/plan.json $O/*/raw/counters.csv $O/*/results.json; do [ -f $f ] && gzip -q $f; done
for f in $O/*/raw/*_stderr.txt; do [ -f $f ] && gzip -q $f; done
cd $OUT && tar czf slices.tgz s && ls -la slices.tgz
