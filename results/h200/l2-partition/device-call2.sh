#!/usr/bin/env bash
# Call 2: the partition peer on a fresh machine, three processes (another seed; 37 and 1000 pages
# allocated first, so other page frames), then memscope's l2.slices with MEMSCOPE_SLICES_MAP=8.
set -u
D=.devcarry/slices; O=$OUT/p; mkdir -p $O
export PATH=$PATH:/usr/local/cuda/bin
el() { python3 -c "import time;print(round(time.time()-$1,1))"; }
{
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv
s=$(date +%s.%N); timeout 150 nvcc -O3 -arch=sm_90 -o /tmp/l2pp $D/l2_partition_peer.cu 2>&1 | head -20; echo "nvcc $(el $s) s"
for a in "3 64 13 0" "4 64 14 37" "5 128 15 1000"; do set -- $a
  s=$(date +%s.%N); timeout 90 /tmp/l2pp /tmp/run$1.bin $2 0,2,131,123 $3 $4 2>&1; echo "run$1 rc $? $(el $s) s"
  [ -x $D/l2_partition_fit ] && timeout 60 $D/l2_partition_fit labels /tmp/run$1.bin $O/labels-run$1.json.gz 2>&1
  gzip -c /tmp/run$1.bin > $O/run$1.bin.gz
done
[ -x $D/l2_partition_fit ] && for t in 4 5; do timeout 60 $D/l2_partition_fit check $O/labels-run3.json.gz $O/labels-run$t.json.gz 1 2>&1 | grep -E '"(sm|mask|fit_agree|fit_lines|held_out_correct|held_out_total|constants)"'; done
if [ -x $D/memscope ]; then
  CU=""; for d in /usr/local/cuda/extras/CUPTI/lib64 /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do ls $d/libcupti.so* >/dev/null 2>&1 && CU="$CU:$d"; done
  s=$(date +%s.%N); LD_LIBRARY_PATH="${CU#:}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" MEMSCOPE_SLICES_MAP=8 MEMSCOPE_SLICES_KEEP=/tmp/map8/raw timeout 100 $D/memscope run --target cuda:0 --probes l2.slices --out /tmp/map8 --quiet > /tmp/map8.log 2>&1; echo "map8 rc $? $(el $s) s"; tail -5 /tmp/map8.log
  (cd /tmp && tar czf $O/map8.tgz map8.log map8/results.json map8/raw/map.json 2>&1 | tail -2)
fi
} > $O/log.txt 2>&1
cat $O/log.txt; ls -la $O
