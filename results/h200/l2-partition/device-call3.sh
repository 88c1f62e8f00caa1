#!/usr/bin/env bash
# Call 3: the partition peer over 512 pages (1 GiB), twice (the second after 100 pages allocated
# first), labels and checks on the device; the raw cycles (80 MB a run) stay there.
set -u
D=.devcarry/slices; O=$OUT/p; mkdir -p $O
export PATH=$PATH:/usr/local/cuda/bin
el() { python3 -c "import time;print(round(time.time()-$1,1))"; }
{
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,serial,uuid --format=csv
s=$(date +%s.%N); timeout 150 nvcc -O3 -arch=sm_90 -o /tmp/l2pp $D/l2_partition_peer.cu 2>&1 | head -20; echo "nvcc $(el $s) s"
for a in "6 512 16 0" "7 512 17 100"; do set -- $a
  s=$(date +%s.%N); timeout 90 /tmp/l2pp /tmp/run$1.bin $2 0,2,131,123 $3 $4 2>&1; echo "run$1 rc $? $(el $s) s"
  s=$(date +%s.%N); timeout 120 $D/l2_partition_fit labels /tmp/run$1.bin $O/labels-run$1.json.gz 2>&1; echo "labels $(el $s) s"
done
for p in "6 7" "7 6" "1 6"; do set -- $p; A=$O/labels-run$1.json.gz; [ $1 = 1 ] && A=$D/labels-run1.json.gz
  s=$(date +%s.%N); timeout 120 $D/l2_partition_fit check $A $O/labels-run$2.json.gz 1 > $O/check-$1-$2.json 2>&1; echo "check $1->$2 rc $? $(el $s) s"
  python3 -c "
import json; d=json.load(open('$O/check-$1-$2.json'))
for c in d: print(' SM',c['sm'],c['mask'],'lines',c['held_out_total']-c['held_out_correct'],'/',c['held_out_total'],'pages',c['held_out_page_lines']-c['held_out_page_lines_correct'],'/',c['held_out_page_lines'],'fits',c['held_out_page_fits'],'fm',c['frame_masks'][:6])"
done
} > $O/log.txt 2>&1
cat $O/log.txt; ls -la $O
