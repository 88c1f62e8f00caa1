#!/usr/bin/env bash
# The README's test command: the whole workspace's tests, with NVRTC (from PyPI, see
# scripts/setup.sh) on the library path so CUDA kernels are compiled in CI. GPU-only tests skip
# themselves when no GPU is present; on a GPU machine run scripts/gpu-test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
nvrtc_dir="$(python3 -c 'import site,os;d=os.path.join(site.getsitepackages()[0],"nvidia","cu13","lib");print(d if os.path.isdir(d) else "")' 2>/dev/null || true)"
if [ -n "$nvrtc_dir" ]; then
  export LD_LIBRARY_PATH="$nvrtc_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export MEMSCOPE_NVRTC_AVAILABLE=1
fi
# Under a batch scheduler (SLURM_PROCID set) `memscope run --out DIR` would write DIR/<host>-rank<N>/;
# the tests expect DIR itself (tests/cli/fleet.rs sets the scheduler variables where it tests that).
export MEMSCOPE_NO_SCHEDULER=1
cargo test --workspace --release "$@"
