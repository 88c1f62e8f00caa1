#!/usr/bin/env bash
# call 2 (issue 35 validation): new binary: link vs PyTorch pageable x3 + variants, two default runs,
# launch alone (no CPU lane), a --quick run, ncu replay-mode timing. Base binary run from call 1.
set -u
B=.devcarry/fast/memscope
O=$OUT/c2; mkdir -p $O/link $O/ncu
export PATH=$PATH:/usr/local/cuda/bin
T() { python3 -c "import time;print(f'{time.time():.2f}')"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $O/nvidia-smi.txt 2>&1
for r in A B; do s=$(T); timeout 150 $B run --out $O/run$r --quiet > $O/run$r.log 2>&1; echo "run$r rc $? $(python3 -c "print(round($(T)-$s,1))") s"; done
s=$(T); timeout 60 $B run --target cuda:0 --probes launch --out $O/launch-alone --quiet > $O/launch-alone.log 2>&1; echo "launch-alone rc $? $(python3 -c "print(round($(T)-$s,1))") s"
s=$(T); timeout 60 $B run --quick --out $O/quick --quiet > $O/quick.log 2>&1; echo "quick rc $? $(python3 -c "print(round($(T)-$s,1))") s"
for r in 1 2 3; do
  timeout 60 $B run --target cuda:0 --probes link --quiet --out $O/link/run$r > $O/link/run$r.log 2>&1; echo "link $r rc $?"
  timeout 90 python3 scripts/device/pytorch_link.py --sizes 67108864,268435456,1073741824 --out $O/link/pt$r.json > /dev/null 2> $O/link/pt$r.log; echo "pt $r rc $?"
done
timeout 90 python3 .devcarry/fast/pytorch_pageable_variants.py > $O/link/pt-variants.json 2> $O/link/pt-variants.log; echo "variants rc $?"
python3 - $O/ncu <<'P'
import json,random,sys
o=sys.argv[1]; U=256; random.seed(1); ks=[]
for _ in range(200):
    ls=random.sample(range(16384),12)
    ks.append([[ls[0]*128,U<<11]]+[[x*128,U<<j] for j,x in enumerate(ls[1:])])
json.dump({"sm":0,"warps":32,"kernels":ks},open(f"{o}/p200.json","w"))
P
M=lts__t_sectors_srcunit_tex_op_read
for mode in kernel application; do
  s=$(T); timeout 100 ncu --csv --print-units base --clock-control none --cache-control none --replay-mode $mode -k regex:slice_hammer --metrics $M.max,$M.sum,$M.avg $B hammer-lines --plan $O/ncu/p200.json --device 0 > $O/ncu/$mode.txt 2>&1; echo "ncu replay=$mode rc $? $(python3 -c "print(round($(T)-$s,2))") s kernels $(grep -c "$M.max" $O/ncu/$mode.txt)"
done
python3 .devcarry/fast/summary2.py $O > $O/summary.txt 2>&1; cat $O/summary.txt
cd $O && rm -f ncu/p200.json && for f in ncu/*.txt; do gzip -q $f; done; cd $OUT && tar czf c2.tgz c2 && ls -la c2.tgz
