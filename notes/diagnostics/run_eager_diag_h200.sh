#!/bin/bash
# The eager-step diagnostics (diag_eager.py), then the step-time sweep again with each step's
# event time and host issue time kept, with nvidia-smi logging clocks, power and clock-event
# reasons every 50 ms beside them. Usage (repo root): OUT=DIR bash notes/diagnostics/run_eager_diag_h200.sh
# Writes OUT/diag.tar.gz (log.txt, smi.csv, diag.json, traces/, sweep/summary.json).
export PYTHONUNBUFFERED=1
here="$(cd "$(dirname "$0")" && pwd)"
: "${OUT:?set OUT to the output folder}"
mkdir -p "$OUT/w"
{
date -u
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,power.limit,temperature.gpu --format=csv
nproc; python3 -c 'import torch;print(torch.__version__)'
f=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu,clocks_event_reasons.active
nvidia-smi --query-gpu=$f --format=csv >/dev/null 2>&1 || f=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu
nvidia-smi --query-gpu=$f --format=csv -lms 50 > "$OUT/w/smi.csv" 2>&1 &
smi=$!
echo "unix_start $(date +%s.%N)"
timeout 90 python3 "$here/diag_eager.py" "$OUT/w" 8,64,128,256,512 256; echo "diag rc $?"
echo "sweep_start $(date +%s.%N)"
timeout 200 python3 "$here/../../scripts/programs/run_programs.py" --out "$OUT/w/sweep" --skip-traces --keep-times --reps 100 --budget-s 170; echo "sweep rc $?"
kill $smi
date -u
} 2>&1 | tee "$OUT/w/log.txt"
cd "$OUT" && tar czf diag.tar.gz w && rm -rf w
