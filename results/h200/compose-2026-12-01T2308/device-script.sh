#!/usr/bin/env bash
# lead's second device call: issue 22 sweep, GPU tests, far-L2 note + far copies + l2bw, peer L2 bandwidth
set -u
B=target/gpu-run/memscope
O=$OUT
chmod +x $B target/gpu-bin/* 2>/dev/null
date -u
bash scripts/device/compose.sh $B $O/compose > $O/compose.log 2>&1; echo "compose rc $?"; tail -60 $O/compose.log
s=$(date +%s%N); $B run --target cuda:0 --probes latency,l2ways,l2bw --out $O/far --quiet > $O/far.txt 2>&1; echo "far rc $? $(( ($(date +%s%N)-s)/1000000 )) ms"
python3 - <<'PY'
import json,os
d=json.load(open(os.environ['OUT']+'/far/results.json'))
for k,x in d['findings'].items():
    if any(s in k for s in ('l2.far','l2.ways','l2.bandwidth','l2.sets@')):
        print(k, x.get('value'), x.get('confidence'), '|', (x.get('note') or '')[:600])
PY
bash .peers/run-peer-l2.sh > $O/peer-l2.txt 2>&1; echo "peer-l2 rc $?"; cat $O/peer-l2.txt | cut -c1-80
( time bash scripts/gpu-test.sh ) > $O/gpu-test.log 2>&1; echo "gpu-test rc $?"; grep -E "test result|FAIL|panick" $O/gpu-test.log | head
cd $O && tar czf /tmp/lead2.tgz . && rm -rf $O/* && mv /tmp/lead2.tgz $O/lead2.tgz && ls -la $O
