#!/usr/bin/env bash
# Lead's validation call: old (e3d3b30) vs merged binary default runs, a GPU-only run, GPU tests.
set -u
L=.devcarry/lead
export MEMSCOPE_NO_SCHEDULER=1
mkdir -p $OUT/runs
nvidia-smi -L > $OUT/runs/gpu.txt 2>&1
nproc >> $OUT/runs/gpu.txt
run() { # name bin args...
  local name=$1 bin=$2; shift 2
  local t0=$(date +%s.%N)
  timeout 150 $bin run --out /tmp/$name --quiet "$@" > /tmp/$name.stdout 2> /tmp/$name.stderr
  local rc=$?
  local t1=$(date +%s.%N)
  echo "$name rc=$rc wall=$(python3 -c "print(round($t1-$t0,1))") args=$*" | tee -a $OUT/runs/log.txt
  cp /tmp/$name/results.json $OUT/runs/$name.json 2>/dev/null
  tail -3 /tmp/$name.stderr >> $OUT/runs/log.txt
}
run old1 $L/memscope-old
run new1 $L/memscope-new
run new2 $L/memscope-new
run gpuonly $L/memscope-new --target cuda:0
echo "== gpu tests" >> $OUT/runs/log.txt
timeout 200 bash scripts/gpu-test.sh > $OUT/runs/gpu-test.txt 2>&1; echo "gpu-test rc=$?" | tee -a $OUT/runs/log.txt
grep -E "^== |test result|FAILED|panicked" $OUT/runs/gpu-test.txt | tail -30
cat $OUT/runs/log.txt
cd $OUT && tar czf runs.tgz runs && rm -rf runs
