set -u
O=$OUT; mkdir -p $O/dram $O/link
B=target/gpu-run/memscope
timeout 100 $B run --target cuda:0 --probes bw --quiet --out $O/dram/bw > $O/dram/bw.log 2>&1; echo "bw rc $?"
python3 scripts/pytorch_bw.py --out $O/dram/pytorch_bw.json > $O/dram/pytorch_stdout.json 2> $O/dram/pytorch.log; echo "pytorch rc $?"; tail -8 $O/dram/pytorch.log
python3 - $O/dram <<'P'
import json,sys
d=json.load(open(sys.argv[1]+'/bw/results.json'))['findings']
for k,v in d.items():
    if k.startswith('dram.') and 'bandwidth' in k: print(k, v.get('value'))
P
timeout 250 bash scripts/device/link.sh $B $O/link > $O/link.log 2>&1; echo "link rc $?"; cat $O/link/compare.txt | head -40
cd $O && tar czf all.tgz dram link link.log && ls -la all.tgz
