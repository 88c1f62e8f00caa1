#!/usr/bin/env bash
# l2.slices on the H200: the packed design (default) twice, both designs in one child (same page),
# six pages, a --quick run. Everything under $OUT/s, packed as slices.tgz.
set -u
D=.devcarry/slices; B=$D/memscope
O=$OUT/s; mkdir -p $O
export PATH=$PATH:/usr/local/cuda/bin
T() { date +%s.%N; }
el() { python3 -c "print(round($(T)-$1,2))"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > $O/nvidia-smi.txt 2>&1
ncu --version > $O/ncu-version.txt 2>&1
run() { # name, env..., timeout
  local name=$1; shift
  s=$(T); env "$@" MEMSCOPE_SLICES_KEEP=$O/$name/raw timeout 200 $B run --target cuda:0 --probes l2.slices --out $O/$name --quiet > $O/$name.log 2>&1
  echo "$name rc $? $(el $s) s"
}
run packed1
run packed2

run both MEMSCOPE_SLICES_DESIGN=both
run pages6 MEMSCOPE_SLICES_PAGES=6
s=$(T); MEMSCOPE_SLICES_KEEP=$O/quick/raw timeout 100 $B run --quick --target cuda:0 --probes l2.slices --out $O/quick --quiet > $O/quick.log 2>&1; echo "quick rc $? $(el $s) s"

python3 $D/summary.py $O > $O/summary.txt 2>&1; cat $O/summary.txt
for f in $O/*/raw/ncu_stdout.txt $O/*/raw/plan.json $O/*/raw/counters.csv; do [ -f $f ] && gzip -q $f; done
rm -f $O/*/raw/ncu_stderr.txt.gz
cd $OUT && tar czf slices.tgz s && ls -la slices.tgz
