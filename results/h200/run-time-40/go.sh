#!/usr/bin/env bash
# The fast helper's device call (run from the repository root as `bash .devcarry/fast/go.sh`, with
# the stripped binaries of `scripts/gpu-test.sh --build` in .devcarry/fast/bin): two default runs
# (the first on a fresh machine: a cold driver cache), the launch probe alone twice, a --quick run,
# three alternations of the link probe alone and scripts/pytorch_link.py, the page-kind diagnostic
# (notes/diagnostics/device/pageable_pages.py), the GPU tests; summary.py over it all. Everything
# lands in $OUT/fast.tgz.
set -u
D=.devcarry/fast
B=$D/bin/memscope
O=/tmp/fast; rm -rf $O; mkdir -p $O/link
export MEMSCOPE_NO_SCHEDULER=1
T() { date +%s.%N; }
el() { python3 -c "print(round($(T)-$1,1))"; }
pack() { (cd /tmp && tar czf $OUT/fast.tgz fast); }  # (again after each stage: a cut-off call keeps what ran)
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv; nproc;
  for k in enabled defrag; do echo "thp $k: $(cat /sys/kernel/mm/transparent_hugepage/$k 2>&1)"; done
  echo "compute cache entries before: $(ls ~/.nv/ComputeCache 2>/dev/null | wc -l)"; $B --version; } > $O/machine.txt 2>&1
for r in A B; do s=$(T); timeout 100 $B run --out $O/run$r --quiet > $O/run$r.log 2>&1; echo "run$r rc $? $(el $s) s"; done
s=$(T); timeout 20 $B run --target cuda:0 --probes launch --out $O/alone1 --quiet > $O/alone1.log 2>&1; echo "alone1 rc $? $(el $s) s"
s=$(T); timeout 40 $B run --quick --out $O/quick --quiet > $O/quick.log 2>&1; echo "quick rc $? $(el $s) s"
s=$(T); timeout 20 $B run --target cuda:0 --probes launch --out $O/alone2 --quiet > $O/alone2.log 2>&1; echo "alone2 rc $? $(el $s) s"
pack
for r in 1 2 3; do
  s=$(T); timeout 30 $B run --target cuda:0 --probes link --quiet --out $O/link/link$r > $O/link/link$r.log 2>&1; echo "link $r rc $? $(el $s) s"
  s=$(T); timeout 40 python3 scripts/pytorch_link.py --sizes 67108864,268435456,1073741824 --out $O/link/pt$r.json > /dev/null 2> $O/link/pt$r.log; echo "pt $r rc $? $(el $s) s"
done
s=$(T); timeout 40 python3 $D/pageable_pages.py 4 > $O/pages.json 2> $O/pages.log; echo "pages rc $? $(el $s) s"
s=$(T); mkdir -p target; rm -rf target/gpu-bin; cp -r $D/bin target/gpu-bin
python3 $D/summary.py $O > $O/summary.txt 2>&1; cat $O/summary.txt
pack
timeout 100 bash scripts/gpu-test.sh > $O/gpu-test.txt 2>&1; echo "gpu-test rc $? $(el $s) s"
grep -E "^== |test result|FAILED|panicked" $O/gpu-test.txt | tail -30
pack
