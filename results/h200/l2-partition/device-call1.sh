#!/usr/bin/env bash
# The partition peer on the H200: built with nvcc, two processes of 64 pages each.
set -u
D=.devcarry/slices; O=$OUT/p; mkdir -p $O
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > $O/nvidia-smi.txt 2>&1
s=$(date +%s.%N); timeout 150 nvcc -O3 -arch=sm_90 -o /tmp/l2pp $D/l2_partition_peer.cu > $O/nvcc.log 2>&1; echo "nvcc rc $? $(python3 -c "import time;print(round(time.time()-$s,1))") s"; cat $O/nvcc.log | head -20
for r in 1 2; do s=$(date +%s.%N); timeout 90 /tmp/l2pp $O/run$r.bin 64 0,2,131,123 1$r > $O/run$r.log 2>&1; echo "run$r rc $? $(python3 -c "import time;print(round(time.time()-$s,1))") s"; cat $O/run$r.log; done
timeout 120 python3 $D/psummary.py $O/run1.bin $O/run2.bin > $O/summary.txt 2>&1; cat $O/summary.txt
gzip -q $O/run*.bin
cd $OUT && tar czf partition.tgz p && ls -la partition.tgz
