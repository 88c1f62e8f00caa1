#!/usr/bin/env bash
# lead's final device call (a): repeatability (3 full runs + each probe alone)
set -u
B=target/gpu-run/memscope
O=$OUT
chmod +x $B 2>/dev/null
date -u
timeout 560 bash scripts/repeatability.sh $B $O/rep 3 cuda:0 > $O/rep.log 2>&1; echo "rep rc $?"
grep -E "^== |wall_ms|exit" $O/rep/log.txt | paste - - - | awk '{print $2, $NF}' | head -60
grep -E "flips|FLIP|DIFFER" $O/rep/table.md | head -30
date -u
cd $O && tar czf /tmp/lead4.tgz . && rm -rf $O/* && mv /tmp/lead4.tgz $O/lead4.tgz && ls -la $O
