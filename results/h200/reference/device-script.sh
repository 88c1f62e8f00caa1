set -u
O=$OUT; mkdir -p $O/l2bw $O/runs $O/compose $O/gputest
B=target/gpu-run/memscope
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $O/nvidia-smi.txt 2>&1
bash scripts/device/compose.sh $B $O/compose > $O/compose.log 2>&1; echo "compose rc $?"; grep -h "dependent step\|composition: median" $O/compose/compose-run*-log.txt
for r in 1 2; do s=$(date +%s); timeout 100 $B run --target cuda:0 --probes l2bw --out $O/l2bw/run$r > $O/l2bw/run$r.log 2>&1; echo "l2bw $r rc $? $(( $(date +%s)-s )) s"; done
bash .peers/run-peer-l2.sh > $O/l2bw/peer-l2.txt 2>&1; echo "peer rc $?"
for r in 1 2; do s=$(date +%s); timeout 120 $B run --out $O/runs/run$r --quiet > $O/runs/run$r.log 2>&1; echo "run $r rc $? wall $(( $(date +%s)-s )) s"; done
python3 - $O <<'P'
import json,sys
o=sys.argv[1]
for r in (1,2):
    d=json.load(open(f"{o}/l2bw/run{r}/results.json"))
    f=d['findings']['l2.bandwidth_bytes_per_s']; print('l2bw',r, f['value']/1e12, f.get('note','')[:200])
    s=d['series']['l2bw.read_by_footprint']; print(' '.join(f"{x/2**20:.0f}:{y/1e12:.2f}" for x,y in zip(s['x'],s['y'])))
for r in (1,2):
    d=json.load(open(f"{o}/runs/run{r}/results.json"))
    f=d['findings']
    for k in ['l2.bandwidth_bytes_per_s','atomics.global_distinct_ops_per_s','l2.write_bandwidth_bytes_per_s','l2.inflight_90pct_per_sm_bytes']:
        v=f.get(k,{}).get('value'); print('run',r,k,v)
P
timeout 200 bash scripts/gpu-test.sh > $O/gputest/gpu-test.txt 2>&1; echo "gpu-test rc $?"; grep -E "^test result|FAILED|panicked|^== " $O/gputest/gpu-test.txt | head -40
cd $O && tar czf all.tgz compose l2bw runs gputest nvidia-smi.txt *.log && ls -la all.tgz
