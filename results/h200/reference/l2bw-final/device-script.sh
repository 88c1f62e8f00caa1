set -u
O=$OUT; mkdir -p $O/l2bw
B=target/gpu-run/memscope
for r in 1 2; do timeout 100 $B run --target cuda:0 --probes l2bw --out $O/l2bw/run$r > $O/l2bw/run$r.log 2>&1; echo "l2bw $r rc $?"; done
bash .peers/run-peer-l2.sh > $O/l2bw/peer-l2.txt 2>&1; echo "peer rc $?"
python3 scripts/compare_l2_peer.py $O/l2bw/peer-l2.txt $O/l2bw/run1/results.json $O/l2bw/run2/results.json > $O/l2bw/compare.txt 2>&1; cat $O/l2bw/compare.txt
cd $O && tar czf all.tgz l2bw
