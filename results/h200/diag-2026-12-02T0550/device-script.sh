set -u
O=$OUT; mkdir -p $O/lv $O/l2 $O/compose $O/pt
B=target/gpu-run/memscope
(time bash scripts/device/link_variants.sh $B $O/lv) > $O/lv.log 2>&1; echo "lv rc $?"; tail -45 $O/lv/summary.txt
python3 scripts/device/pytorch_link.py --out $O/pt/pytorch_link.json > $O/pt/stdout.json 2> $O/pt/log.txt; echo "pt rc $?"; tail -12 $O/pt/log.txt
(time bash scripts/device/l2read_variants.sh $B $O/l2) > $O/l2.log 2>&1; echo "l2 rc $?"; cat $O/l2/l2read_variants.txt | head -80
bash .peers/run-peer-l2.sh > $O/l2/peer-l2.txt 2>&1; echo "peer rc $?"; grep kB $O/l2/peer-l2.txt | cut -c1-70 | awk 'NR%3==1'
bash scripts/device/compose.sh $B $O/compose > $O/compose.log 2>&1; echo "compose rc $?"; grep -h "dependent step\|Scores\|composition: median\|T=1024 b=1 \|T=128 b=1 " $O/compose/compose-run*-log.txt
cd $O && tar czf all.tgz lv l2 compose pt *.log && ls -la all.tgz
