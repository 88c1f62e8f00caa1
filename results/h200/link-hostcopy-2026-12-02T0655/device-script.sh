set -u
O=$OUT; mkdir -p $O/link
B=target/gpu-run/memscope
for d in /usr/local/cuda/lib64; do export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}" MEMSCOPE_NVRTC_AVAILABLE=1; done
timeout 60 target/gpu-bin/gpu-ee504d10f83a0ca7 --test-threads=1 --include-ignored link_probe_measures_the_host_link > $O/link/gpu-test-link.txt 2>&1; echo "gpu test rc $?"; grep "test result\|panicked" $O/link/gpu-test-link.txt
for r in 1 2; do timeout 40 $B run --target cuda:0 --probes link --quiet --out $O/link/run$r > $O/link/run$r.log 2>&1; echo "link $r rc $?"; done
python3 - $O/link <<'P'
import json,sys
for r in (1,2):
    f=json.load(open(f"{sys.argv[1]}/run{r}/results.json"))['findings']
    for k in ['link.host_memcpy_pageable_to_pinned_bytes_per_s','link.host_memcpy_pinned_to_pageable_bytes_per_s','link.host_to_device_memcpy_ce_pageable_bytes_per_s','link.device_to_host_memcpy_ce_pageable_bytes_per_s']:
        print(r,k,round(f[k]['value']/1e9,3))
P
