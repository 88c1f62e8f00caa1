#!/usr/bin/env bash
# Lead's final call: two default runs, a --quick run, the launch probe alone, the GPU tests.
set -u
M=target/gpu-bin/memscope
export MEMSCOPE_NO_SCHEDULER=1
R=$OUT/runs; mkdir -p $R
{ nvidia-smi -L; nproc; $M --version; } > $R/machine.txt 2>&1
run() { # name args...
  local name=$1; shift
  local t0=$(date +%s.%N)
  timeout 120 $M run --out /tmp/$name --quiet "$@" > /tmp/$name.stdout 2> /tmp/$name.stderr
  local rc=$?
  local t1=$(date +%s.%N)
  echo "$name rc=$rc wall=$(python3 -c "print(round($t1-$t0,1))") args=$*" | tee -a $R/log.txt
  cp /tmp/$name/results.json $R/$name.json 2>/dev/null
  cp /tmp/$name.stdout $R/$name.datasheet.txt 2>/dev/null
  tail -3 /tmp/$name.stderr >> $R/log.txt
}
run runA
run runB
run quick --quick
run launch-alone --target cuda:0 --probes launch
echo "== gpu tests" >> $R/log.txt
timeout 240 bash scripts/gpu-test.sh > $R/gpu-test.txt 2>&1; echo "gpu-test rc=$?" | tee -a $R/log.txt
grep -E "^== |test result|FAILED|panicked" $R/gpu-test.txt | tail -40
cd $OUT && tar czf runs.tgz runs && rm -rf runs
