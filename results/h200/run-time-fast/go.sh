#!/usr/bin/env bash
# The fast helper's device call: two default runs (the first on a fresh machine: a cold driver
# cache), the launch probe alone twice, a --quick run, three alternations of the link probe and
# scripts/pytorch_link.py; then summary.py. Run from the repository root.
set -u
B=.devcarry/fast/memscope
O=$OUT/fast; mkdir -p $O/link
T() { date +%s.%N; }
el() { python3 -c "print(round($(T)-$1,1))"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $O/nvidia-smi.txt 2>&1
cat /sys/kernel/mm/transparent_hugepage/enabled > $O/thp.txt 2>&1
ls ~/.nv/ComputeCache 2>/dev/null | wc -l > $O/compute-cache-entries-before.txt
$B --version > $O/version.txt 2>&1
for r in A B; do s=$(T); timeout 110 $B run --out $O/run$r --quiet > $O/run$r.log 2>&1; echo "run$r rc $? $(el $s) s"; done
s=$(T); timeout 20 $B run --target cuda:0 --probes launch --out $O/alone1 --quiet > $O/alone1.log 2>&1; echo "alone1 rc $? $(el $s) s"
s=$(T); timeout 40 $B run --quick --out $O/quick --quiet > $O/quick.log 2>&1; echo "quick rc $? $(el $s) s"
s=$(T); timeout 20 $B run --target cuda:0 --probes launch --out $O/alone2 --quiet > $O/alone2.log 2>&1; echo "alone2 rc $? $(el $s) s"
for r in 1 2 3; do
  s=$(T); timeout 30 $B run --target cuda:0 --probes link --quiet --out $O/link/link$r > $O/link/link$r.log 2>&1; echo "link $r rc $? $(el $s) s"
  s=$(T); timeout 40 python3 scripts/pytorch_link.py --sizes 67108864,268435456,1073741824 --out $O/link/pt$r.json > /dev/null 2> $O/link/pt$r.log; echo "pt $r rc $? $(el $s) s"
done
python3 .devcarry/fast/summary.py $O > $O/summary.txt 2>&1; cat $O/summary.txt
