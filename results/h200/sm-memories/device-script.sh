#!/usr/bin/env bash
# lead's third device call: the helpers' device scripts (issues 25, 16) and the GPU tests
set -u
B=target/gpu-run/memscope
O=$OUT
chmod +x $B target/gpu-bin/* 2>/dev/null
date -u
for s in smem constmem link; do
  st=$(date +%s); timeout 200 bash scripts/device/$s.sh $B $O/$s > $O/$s.log 2>&1; echo "== $s rc $? $(( $(date +%s)-st )) s"
  [ -f $O/$s/summary.txt ] && head -c 5000 $O/$s/summary.txt
  tail -20 $O/$s.log | cut -c1-300
done
( time bash scripts/gpu-test.sh ) > $O/gpu-test.log 2>&1; echo "gpu-test rc $?"; grep -E "test result|FAIL|panick" $O/gpu-test.log | head -20
date -u
cd $O && tar czf /tmp/lead3.tgz . && rm -rf $O/* && mv /tmp/lead3.tgz $O/lead3.tgz && ls -la $O
