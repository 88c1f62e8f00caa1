#!/usr/bin/env bash
# Lead's first call: two default runs (A on the fresh machine), the GPU tests, then the random-hierarchy
# sweep (CPU only, every core) of the probe test binary.
set -u
B=target/gpu-bin/memscope
O=/tmp/c1; rm -rf $O; mkdir -p $O
export MEMSCOPE_NO_SCHEDULER=1
T() { date +%s.%N; }
el() { python3 -c "print(round($(T)-$1,1))"; }
pack() { (cd /tmp && tar czf $OUT/c1.tgz c1); }
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv; nproc; lscpu | head -20; $B --version; } > $O/machine.txt 2>&1
for r in A B; do s=$(T); timeout 100 $B run --out $O/run$r --quiet > $O/run$r.log 2>&1; echo "run$r rc $? $(el $s) s"; done
pack
s=$(T); timeout 200 bash scripts/gpu-test.sh > $O/gpu-test.txt 2>&1; echo "gpu-test rc $? $(el $s) s"
grep -E "^== |test result|FAILED|panicked|fault path" $O/gpu-test.txt | tail -30
pack
P=.devcarry/lead/probe-tests
s=$(T); MEMSCOPE_SWEEP=200 MEMSCOPE_HELD_OUT=60 MEMSCOPE_THREADS=$(nproc) timeout 290 $P random_hierarchies::sweep --ignored --nocapture > $O/sweep.txt 2>&1; echo "sweep rc $? $(el $s) s"
grep -E "hierarchies pass|wrong:|[1-9][0-9]* wrong" $O/sweep.txt | tail -20
pack
