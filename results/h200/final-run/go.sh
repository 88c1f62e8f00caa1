#!/usr/bin/env bash
# Lead's final call: two default runs (the first on a fresh machine), the launch probe alone twice,
# --quick, three alternations of the link probe alone and PyTorch's copies, the GPU tests.
set -u
B=target/gpu-bin/memscope
O=/tmp/final; rm -rf $O; mkdir -p $O/link
export MEMSCOPE_NO_SCHEDULER=1
T() { date +%s.%N; }
el() { python3 -c "print(round($(T)-$1,1))"; }
pack() { (cd /tmp && tar czf $OUT/final.tgz final); }
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv; nproc; $B --version; } > $O/machine.txt 2>&1
for r in A B; do s=$(T); timeout 100 $B run --out $O/run$r --quiet > $O/run$r.log 2>&1; echo "run$r rc $? $(el $s) s"; done
s=$(T); timeout 20 $B run --target cuda:0 --probes launch --out $O/alone1 --quiet > $O/alone1.log 2>&1; echo "alone1 rc $? $(el $s) s"
s=$(T); timeout 40 $B run --quick --out $O/quick --quiet > $O/quick.log 2>&1; echo "quick rc $? $(el $s) s"
s=$(T); timeout 20 $B run --target cuda:0 --probes launch --out $O/alone2 --quiet > $O/alone2.log 2>&1; echo "alone2 rc $? $(el $s) s"
pack
for r in 1 2 3; do
  s=$(T); timeout 30 $B run --target cuda:0 --probes link --quiet --out $O/link/link$r > $O/link/link$r.log 2>&1; echo "link $r rc $? $(el $s) s"
  s=$(T); timeout 40 python3 scripts/pytorch_link.py --sizes 67108864,268435456 --out $O/link/pt$r.json > /dev/null 2> $O/link/pt$r.log; echo "pt $r rc $? $(el $s) s"
done
pack
s=$(T); timeout 150 bash scripts/gpu-test.sh > $O/gpu-test.txt 2>&1; echo "gpu-test rc $? $(el $s) s"
grep -E "^== |test result|FAILED|panicked" $O/gpu-test.txt | tail -30
pack
