set -u
BIN=target/gpu-run/memscope
mkdir -p $OUT/c4/link $OUT/c4/gputest
export MEMSCOPE_NO_SCHEDULER=1
bash scripts/gpu-test.sh > $OUT/c4/gputest/gpu-test.log 2>&1; echo "gpu-test rc=$?" | tee -a $OUT/c4/gputest/gpu-test.log
$BIN run --target cuda:0 --probes link --quiet --out $OUT/c4/link/run1 > $OUT/c4/link/run1.log 2>&1
python3 scripts/device/pytorch_link.py --out $OUT/c4/link/pytorch_link.json > /dev/null 2> $OUT/c4/link/pytorch_link.log
$BIN run --target cuda:0 --probes link --quiet --out $OUT/c4/link/run2 > $OUT/c4/link/run2.log 2>&1
python3 scripts/device/link_compare.py $OUT/c4/link/run1/results.json $OUT/c4/link/run2/results.json $OUT/c4/link/pytorch_link.json > $OUT/c4/link/compare.txt 2>&1
grep -E "bidirectional_memcpy_sm|ok$|OVER" $OUT/c4/link/compare.txt | head -16
cd $OUT && tar czf c4.tgz c4 && rm -rf c4
