set -u
O=$OUT; mkdir -p $O/att $O/l2bw
B=target/gpu-run/memscope
nvcc -O3 -arch=sm_90 -o $O/att/attention_check scripts/device/attention_check.cu > $O/att/build.log 2>&1; echo "build rc $?"; tail -5 $O/att/build.log
$O/att/attention_check > $O/att/check.txt 2>&1; echo "check rc $?"; cat $O/att/check.txt
for c in step one; do timeout 100 ncu --kernel-name decode_attention_f16 --launch-skip 20 --launch-count 1 --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis --section Occupancy --section SchedulerStats $O/att/attention_check $c > $O/att/ncu-$c.txt 2>&1; echo "ncu $c rc $?"
grep -E "Duration|Stall|Warp Cycles Per Issued|DRAM Throughput|L2 Hit|Achieved Occupancy|Registers|Issued Warp|Eligible|Active Warps" $O/att/ncu-$c.txt | head -20; done
timeout 100 ncu --kernel-name decode_attention_f16 --launch-skip 20 --launch-count 1 --metrics smsp__pcsamp_warps_issue_stalled_long_scoreboard,smsp__pcsamp_warps_issue_stalled_short_scoreboard,smsp__pcsamp_warps_issue_stalled_wait,smsp__pcsamp_warps_issue_stalled_mio_throttle,smsp__pcsamp_warps_issue_stalled_lg_throttle,smsp__pcsamp_warps_issue_stalled_barrier,smsp__pcsamp_warps_issue_stalled_math_pipe_throttle,smsp__pcsamp_warps_issue_stalled_membar,smsp__pcsamp_warps_issue_stalled_drain,smsp__pcsamp_warps_issue_stalled_selected,smsp__pcsamp_warps_issue_stalled_not_selected,smsp__pcsamp_warps_issue_stalled_dispatch_stall,smsp__pcsamp_warps_issue_stalled_no_instructions,smsp__pcsamp_warps_issue_stalled_imc_miss,smsp__pcsamp_warps_issue_stalled_branch_resolving,smsp__pcsamp_warps_issue_stalled_tex_throttle,smsp__pcsamp_sample_count $O/att/attention_check step > $O/att/ncu-stalls.txt 2>&1; echo "stalls rc $?"; grep -E "pcsamp" $O/att/ncu-stalls.txt | head -20
for r in 1 2; do timeout 100 $B run --target cuda:0 --probes l2bw --out $O/l2bw/run$r > $O/l2bw/run$r.log 2>&1; echo "l2bw $r rc $?"; done
python3 - $O/l2bw <<'P'
import json,sys
for r in (1,2):
    d=json.load(open(f"{sys.argv[1]}/run{r}/results.json"))
    f=d['findings']['l2.bandwidth_bytes_per_s']; print(r, f['value']/1e12, f.get('note','')[:300])
    s=d['series']['l2bw.read_by_footprint']; print(' '.join(f"{x/2**20:.0f}:{y/1e12:.2f}" for x,y in zip(s['x'],s['y'])))
P
bash .peers/run-peer-l2.sh > $O/l2bw/peer-l2.txt 2>&1; echo "peer rc $?"
cd $O && tar czf all.tgz att l2bw && ls -la all.tgz
