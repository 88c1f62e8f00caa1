set -u
BIN=target/gpu-run/memscope
mkdir -p $OUT/c3/link $OUT/c3/gputest
export MEMSCOPE_NO_SCHEDULER=1
bash scripts/gpu-test.sh > $OUT/c3/gputest/gpu-test.log 2>&1; echo "gpu-test rc=$?" | tee -a $OUT/c3/gputest/gpu-test.log
$BIN run --target cuda:0 --probes link --quiet --out $OUT/c3/link/run1 > $OUT/c3/link/run1.log 2>&1
python3 scripts/device/pytorch_link.py --out $OUT/c3/link/pytorch_link.json > /dev/null 2> $OUT/c3/link/pytorch_link.log
$BIN run --target cuda:0 --probes link --quiet --out $OUT/c3/link/run2 > $OUT/c3/link/run2.log 2>&1
python3 scripts/device/link_compare.py $OUT/c3/link/run1/results.json $OUT/c3/link/run2/results.json $OUT/c3/link/pytorch_link.json > $OUT/c3/link/compare.txt 2>&1
grep -E "bidirectional|pageable|round_trip" $OUT/c3/link/compare.txt | head -12
cd $OUT && tar czf c3.tgz c3 && rm -rf c3
