#!/usr/bin/env bash
# Paired default runs: the session's starting code (c654e97: ae3a1ad plus env-gated slice-map
# diagnostics) against the merged tree, alternating, on one machine.
set -u
O=$OUT/ab; mkdir -p $O
T() { date +%s.%N; }
el() { python3 -c "print(round($(T)-$1,1))"; }
timeout 60 target/gpu-bin/memscope run --out /tmp/warm --quiet > /dev/null 2>&1; echo "warm-up run rc $?"
for k in 1 2; do
  for v in old new; do
    B=target/gpu-bin/memscope; [ $v = old ] && B=.devcarry/lead/memscope-old
    s=$(T); timeout 100 $B run --out /tmp/$v$k --quiet > $O/$v$k.log 2>&1; echo "$v$k rc $? $(el $s) s"
    gzip -c /tmp/$v$k/results.json > $O/$v$k.json.gz
  done
done
