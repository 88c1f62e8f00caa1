#!/usr/bin/env bash
# Lead: the default run of the pre-move binary (e979b06) and of the post-move binary (c794f80), one call.
set -u
export MEMSCOPE_NO_SCHEDULER=1
R=$OUT/pair; mkdir -p $R
{ nvidia-smi -L; nproc; for b in pre post; do .devcarry/pair/memscope-$b --version; done; } > $R/machine.txt 2>&1
for b in pre post; do
  t0=$(date +%s.%N)
  timeout 150 .devcarry/pair/memscope-$b run --out /tmp/$b --quiet > /tmp/$b.stdout 2> /tmp/$b.stderr
  rc=$?; t1=$(date +%s.%N)
  echo "$b rc=$rc wall=$(python3 -c "print(round($t1-$t0,1))")" | tee -a $R/log.txt
  cp /tmp/$b/results.json $R/$b.json; cp /tmp/$b.stdout $R/$b.datasheet.txt; tail -3 /tmp/$b.stderr >> $R/log.txt
done
cd $OUT && tar czf pair.tgz pair && rm -rf pair
