#!/usr/bin/env bash
set -u
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  ls "$d"/libnvrtc.so* >/dev/null 2>&1 && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" MEMSCOPE_NVRTC_AVAILABLE=1 && break
done
timeout 60 .devcarry/fault/cuda-test --exact gpu::a_kernel_fault_is_reported_and_handled --include-ignored --nocapture --test-threads=1 > $OUT/fault.txt 2>&1; echo "rc $?"
tail -15 $OUT/fault.txt
