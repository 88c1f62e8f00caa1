#!/usr/bin/env bash
# lead's last device call: the fixed texture GPU test and two l2bw runs with the final kernels
set -u
B=target/gpu-run/memscope
O=$OUT
chmod +x $B target/gpu-bin/* 2>/dev/null
for t in target/gpu-bin/gpu-*; do timeout 120 $t --include-ignored texture l1share constmem > $O/gpu-fixed.log 2>&1; echo "gpu tests rc $?"; grep -E "test result|FAILED|panicked" $O/gpu-fixed.log; done
for i in 1 2; do $B run --target cuda:0 --probes l2bw --out $O/l2bw$i --quiet > $O/l2bw$i.txt 2>&1; echo "l2bw$i rc $?"; done
python3 - <<'PY'
import json,os
for i in (1,2):
    d=json.load(open(f"{os.environ['OUT']}/l2bw{i}/results.json"))
    for k,x in d['findings'].items():
        if k.startswith('l2.bandwidth') or k.startswith('l2.capacity'):
            print(i,k,x.get('value'),(x.get('check') or {}).get('value'),(x.get('note') or '')[:160])
    s=[v for k,v in d['series'].items() if 'l2bw' in k][0]
    print(i,[(int(a)>>20, round(b/1e12,2)) for a,b in zip(s['x'],s['y'])])
PY
cd $O && tar czf /tmp/lead6.tgz . && rm -rf $O/* && mv /tmp/lead6.tgz $O/lead6.tgz
