#!/usr/bin/env bash
# The README's "Reading a report" screenshot: the committed H200 run rendered by `memscope report`
# with its bottleneck-model run, numbered callouts added (scripts/report-callouts.js, for the
# screenshot only), captured by headless Chromium 1280 px wide and reduced to a 256-colour PNG
# (pngquant, when installed) so it stays under ~300 KB. Usage: scripts/report-screenshot.sh [OUT.png]
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-docs/img/reading-report-h200.png}"
bin="${MEMSCOPE:-target/release/memscope}"
tmp=$(mktemp -d)
"$bin" report results/h200/full-2026-11-30T0233/run1/results.json --model results/h200/model.json --html "$tmp/report.html"
python3 - "$tmp/report.html" scripts/report-callouts.js <<'PY'
import sys
page, js = open(sys.argv[1]).read(), open(sys.argv[2]).read()
open(sys.argv[1], "w").write(page.replace("</body>", "<script>" + js + "</script></body>", 1))
PY
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1280,2420 \
  --virtual-time-budget=2000 --screenshot="$tmp/shot.png" "file://$tmp/report.html" 2>/dev/null
if command -v pngquant >/dev/null 2>&1; then
  pngquant --force --quality=70-95 --output "$out" "$tmp/shot.png"
else
  cp "$tmp/shot.png" "$out"
fi
rm -rf "$tmp"
ls -l "$out"
