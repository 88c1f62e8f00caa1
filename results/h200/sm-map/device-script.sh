#!/usr/bin/env bash
# l2.sm_map on the H200: the peer twice around one probe run, logs under $OUT (no process
# substitution: a bare `wait` would wait for it).
D=.devcarry/smmap
L=$OUT/log.txt
now() { date +%s.%N; }
{
date -u; nvidia-smi --query-gpu=name,pci.bus_id,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv
chmod +x $D/memscope
s=$(now); nvcc -O3 -arch=sm_90 -o /tmp/sm_map_peer $D/sm_map_peer.cu; echo "nvcc rc=$? $(python3 -c "print(round($(now)-$s,2))") s"
s=$(now); timeout 60 /tmp/sm_map_peer $OUT/peer1.csv 1024 3 7; echo "peer1 rc=$? $(python3 -c "print(round($(now)-$s,2))") s"
s=$(now); timeout 60 $D/memscope run --target cuda:0 --probes l2.sm_map --out /tmp/run3 --quiet; echo "run3 rc=$? $(python3 -c "print(round($(now)-$s,2))") s"
cp /tmp/run3/results.json $OUT/run3.json
s=$(now); timeout 60 /tmp/sm_map_peer $OUT/peer2.csv 1024 3 8; echo "peer2 rc=$? $(python3 -c "print(round($(now)-$s,2))") s"
nvidia-smi --query-gpu=name,pci.bus_id,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv
date -u
} > $L 2>&1
tail -c 3000 $L
