set -u
O=$OUT; mkdir -p $O/att $O/l2bw
B=target/gpu-run/memscope
nvcc -O3 -arch=sm_90 -o $O/att/attention_check scripts/device/attention_check.cu > $O/att/build.log 2>&1; echo "build rc $?"; tail -5 $O/att/build.log
$O/att/attention_check > $O/att/check.txt 2>&1; echo "check rc $?"; cat $O/att/check.txt
timeout 120 ncu --kernel-name regex:decode_attention --launch-skip 20 --launch-count 1 --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats $O/att/attention_check only > $O/att/ncu.txt 2>&1; echo "ncu rc $?"
grep -E "decode_attention|Duration|Stall|Warp Cycles|Memory Throughput|DRAM Throughput|L2 Hit|L1/TEX Hit|Achieved Occupancy|Registers|Issued Warp" $O/att/ncu.txt | head -60
for r in 1 2; do timeout 100 $B run --target cuda:0 --probes l2bw --out $O/l2bw/run$r > $O/l2bw/run$r.log 2>&1; echo "l2bw $r rc $?"; done
python3 - $O/l2bw <<'P'
import json,sys
for r in (1,2):
    d=json.load(open(f"{sys.argv[1]}/run{r}/results.json"))
    f=d['findings']['l2.bandwidth_bytes_per_s']; print(r, f['value']/1e12, f.get('note','')[:400])
    s=d['series']['l2bw.read_by_footprint']; print(' '.join(f"{x/2**20:.0f}:{y/1e12:.2f}" for x,y in zip(s['x'],s['y'])))
P
bash .peers/run-peer-l2.sh > $O/l2bw/peer-l2.txt 2>&1; echo "peer rc $?"; grep kB $O/l2bw/peer-l2.txt | cut -c1-70 | awk 'NR%2==1' | head -40
cd $O && tar czf all.tgz att l2bw && ls -la all.tgz
