#!/usr/bin/env bash
# lead's first device call: CPU lane (#19), concurrency, GPU tests, l2ways/l2policy repeatability (#23), PyTorch bw
set -u
B=target/gpu-run/memscope
O=$OUT
date -u; nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv
chmod +x $B target/gpu-bin/* 2>/dev/null
( time bash scripts/gpu-test.sh ) > $O/gpu-test.log 2>&1; echo "gpu-test rc $?"; tail -5 $O/gpu-test.log
( time bash scripts/cpu-check.sh $B $O/cpucheck ) > $O/cpucheck.log 2>&1; echo "cpu-check rc $?"; tail -25 $O/cpucheck.log
for i in 1 2; do
  s=$(date +%s%N); $B run --target cuda:0 --probes l2ways,l2policy,bw --out $O/geo$i --quiet > $O/geo$i.txt 2>&1; echo "geo$i rc $? $(( ($(date +%s%N)-s)/1000000 )) ms"
done
( time bash scripts/run-concurrency.sh $B $O/conc ) > $O/conc.log 2>&1; echo "conc rc $?"; tail -40 $O/conc.log
python3 scripts/pytorch_bw.py --out $O/pytorch_bw.json > $O/pytorch.log 2>&1; echo "pytorch rc $?"; tail -5 $O/pytorch.log
cd $O && tar czf /tmp/lead1.tgz . && rm -rf $O/* && mv /tmp/lead1.tgz $O/lead1.tgz && ls -la $O
