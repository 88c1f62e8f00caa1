#!/usr/bin/env bash
# lead's final device call (b): composition sweep, the fixed GPU tests, peers, PyTorch
set -u
B=target/gpu-run/memscope
O=$OUT
chmod +x $B target/gpu-bin/* 2>/dev/null
date -u
bash scripts/device/compose.sh $B $O/compose > $O/compose.log 2>&1; echo "compose rc $?"; grep -A6 "^Scores" $O/compose/compose-run1-log.txt $O/compose/compose-run2-log.txt | cut -c1-250
for t in target/gpu-bin/gpu-*; do timeout 120 $t --include-ignored texture l1share constmem > $O/gpu-fixed.log 2>&1; echo "gpu tests rc $?"; grep -E "test result|FAILED|panicked" $O/gpu-fixed.log; done
bash .peers/run-peer-l2.sh > $O/peer-l2.txt 2>&1; echo "peer-l2 rc $?"; grep -E "kB" $O/peer-l2.txt | sed -n '8,36p' | cut -c1-70
bash .peers/run-peer-latency.sh > $O/peer-latency.txt 2>&1; echo "peer-latency rc $?"; tail -8 $O/peer-latency.txt
python3 scripts/pytorch_bw.py --out $O/pytorch_bw.json > $O/pytorch.log 2>&1; echo "pytorch rc $?"
date -u
cd $O && tar czf /tmp/lead5.tgz . && rm -rf $O/* && mv /tmp/lead5.tgz $O/lead5.tgz && ls -la $O
