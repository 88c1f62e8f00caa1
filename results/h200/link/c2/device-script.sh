set -u
BIN=target/gpu-run/memscope
mkdir -p $OUT/c2/drift $OUT/c2/link
export MEMSCOPE_NO_SCHEDULER=1
bash scripts/device/link_drift.sh $BIN $OUT/c2/drift > $OUT/c2/drift/console.txt 2>&1
$BIN run --target cuda:0 --probes link --quiet --out $OUT/c2/link/run1 > $OUT/c2/link/run1.log 2>&1
python3 scripts/device/pytorch_link.py --out $OUT/c2/link/pytorch_link.json > /dev/null 2> $OUT/c2/link/pytorch_link.log
$BIN run --target cuda:0 --probes link --quiet --out $OUT/c2/link/run2 > $OUT/c2/link/run2.log 2>&1
python3 scripts/device/link_compare.py $OUT/c2/link/run1/results.json $OUT/c2/link/run2/results.json $OUT/c2/link/pytorch_link.json > $OUT/c2/link/compare.txt 2>&1
nvidia-smi > $OUT/c2/nvidia-smi.txt 2>&1
cat $OUT/c2/drift/steps.log; grep -c . $OUT/c2/link/compare.txt
cd $OUT && tar czf c2.tgz c2 && rm -rf c2
