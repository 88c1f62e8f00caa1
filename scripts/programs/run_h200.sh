#!/bin/bash
# Runs the real-program sweep and traces on a GPU machine and gathers what comes back.
# Usage: OUT=DIR bash scripts/programs/run_h200.sh [extra run_programs.py options]
# Writes OUT/log.txt, OUT/summary.json and OUT/traces.tar (the gzip Chrome traces).
set -o pipefail
export PYTHONUNBUFFERED=1
here="$(cd "$(dirname "$0")" && pwd)"
: "${OUT:?set OUT to the output folder}"
work="$(mktemp -d /tmp/realprog.XXXXXX)"
{
  date -u
  nvidia-smi -q | head -40
  python3 -c 'import sys, torch; print("python", sys.version.split()[0]); print("torch", torch.__version__, "cuda", torch.version.cuda, "device", torch.cuda.get_device_name(0))'
  python3 -c 'import transformers; print("transformers", transformers.__version__)' || echo "transformers not importable"
  python3 "$here/run_programs.py" --out "$work" "$@"
  echo "run_programs.py exit status $?"
  cp "$work/summary.json" "$OUT/summary.json"
  (cd "$work" && tar cf "$OUT/traces.tar" traces && ls -l traces)
  date -u
} 2>&1 | tee "$OUT/log.txt"
