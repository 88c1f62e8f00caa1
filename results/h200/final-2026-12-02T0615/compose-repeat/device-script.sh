set -u
O=$OUT; mkdir -p $O/compose
B=target/gpu-run/memscope
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $O/nvidia-smi.txt 2>&1
bash scripts/device/compose.sh $B $O/compose > $O/compose.log 2>&1; echo "compose rc $?"; grep -h "composition: median\|T=1024 b=1 " $O/compose/compose-run*-log.txt
