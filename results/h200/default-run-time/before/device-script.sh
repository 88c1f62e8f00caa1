#!/usr/bin/env bash
# call 1: baseline default run (base binary), ncu experiments for l2.slices, link vs PyTorch pageable x3
set -u
B=.devcarry/fast/memscope-base
O=$OUT/c1; mkdir -p $O/ncu $O/link
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $O/nvidia-smi.txt 2>&1
nproc > $O/host.txt; lscpu | head -20 >> $O/host.txt
s=$(date +%s.%N); timeout 150 $B run --out $O/base1 --quiet > $O/base1.log 2>&1; echo "base1 rc $? wall $(echo "$(date +%s.%N)-$s"|bc) s"
# ncu experiments
ncu --version > $O/ncu/version.txt 2>&1
python3 - $O/ncu <<'P'
import json,random,sys
o=sys.argv[1]
U=256
json.dump({"sm":0,"warps":32,"kernels":[[[0,U*64]],[[128,U*64]],[[0,U*64],[128,U*32]],[[256,U*64]],[[0,U*64],[128,U*32],[256,U*16],[4096,U*8]]]},open(o+"/p_inst.json","w"))
random.seed(1)
def design(k):
    ks=[]
    for _ in range(k):
        ls=random.sample(range(16384),12)
        ks.append([[ls[0]*128,U<<11]]+[[x*128,U<<j] for j,x in enumerate(ls[1:])])
    return ks
for k in (20,200):
    json.dump({"sm":0,"warps":32,"kernels":design(k)},open(f"{o}/p{k}.json","w"))
# small-weight variant: same 200 kernels, weights /16 (unit 16 loads not allowed: keep unit 256, anchor 2^11 -> fewer)
P
M=lts__t_sectors_srcunit_tex_op_read
NC="ncu --csv --print-units base --clock-control none --cache-control none -k regex:slice_hammer"
for mode in values details; do
  timeout 60 $NC --print-metric-instances $mode --metrics $M.sum,$M.max,$M.avg,$M $B hammer-lines --plan $O/ncu/p_inst.json --device 0 > $O/ncu/inst_$mode.txt 2>&1; echo "inst $mode rc $?"
done
timeout 60 ncu --query-metrics --chip gh100 > $O/ncu/query.txt 2>&1; grep -i "lts__t_sectors_srcunit_tex\|lts__t_sectors " $O/ncu/query.txt | head
timeout 60 ncu --query-metrics-mode all --query-metrics --chip gh100 2>&1 | grep -i "lts__t_sectors_srcunit_tex_op_read" > $O/ncu/query_all.txt
for k in 20 200; do for m in "$M.max,$M.sum,$M.avg,lts__t_sectors_srcunit_ltcfabric.max,lts__t_sectors_srcunit_ltcfabric.sum" "$M.max,$M.sum,$M.avg"; do
  s=$(date +%s.%N); timeout 100 $NC --metrics $m $B hammer-lines --plan $O/ncu/p$k.json --device 0 > $O/ncu/t_${k}_$(echo $m|wc -c).txt 2>&1; echo "ncu k=$k metrics=$(echo $m|tr ',' '\n'|wc -l) rc $? $(echo "$(date +%s.%N)-$s"|bc) s"
done; done
s=$(date +%s.%N); timeout 60 $B hammer-lines --plan $O/ncu/p200.json --device 0 > $O/ncu/child200.txt 2>&1; echo "child alone 200 rc $? $(echo "$(date +%s.%N)-$s"|bc) s"
# link vs PyTorch pageable, alternating x3
for r in 1 2 3; do
  s=$(date +%s.%N); timeout 60 $B run --target cuda:0 --probes link --quiet --out $O/link/run$r > $O/link/run$r.log 2>&1; echo "link $r rc $? $(echo "$(date +%s.%N)-$s"|bc) s"
  s=$(date +%s.%N); timeout 90 python3 scripts/device/pytorch_link.py --sizes 67108864,268435456,1073741824 --out $O/link/pt$r.json > /dev/null 2> $O/link/pt$r.log; echo "pt $r rc $? $(echo "$(date +%s.%N)-$s"|bc) s"
done
python3 - $O <<'P'
import json,sys
o=sys.argv[1]
d=json.load(open(o+"/base1/results.json"))
print("started",d.get("started_at"),"finished",d.get("finished_at"))
print({k:round(v["duration_s"],2) for k,v in d["probes"].items() if v["duration_s"]>0.05})
print(d["environment"].get("cpu_lane"))
for r in (1,2,3):
    m=json.load(open(f"{o}/link/run{r}/results.json")); p=json.load(open(f"{o}/link/pt{r}.json"))
    for t,k in (("host_to_device_memcpy_ce_pageable","pageable_h2d"),("device_to_host_memcpy_ce_pageable","pageable_d2h")):
        s=m["series"]["link."+t]; ms={int(x):y for x,y in zip(s["x"],s["y"])}
        pv={row["bytes"]:round(row[k+"_bytes_per_s"]/1e9,2) for row in p["rows"]}
        print(r,t,{sz:round(ms.get(sz,0)/1e9,2) for sz in (67108864,268435456,1073741824)}, "pt",pv, "finding", round(m["findings"].get("link."+t+"_bytes_per_s",{}).get("value") or 0,0))
P
head -c 3000 $O/ncu/inst_values.txt
cd $OUT && tar czf c1.tgz c1 && ls -la c1.tgz
