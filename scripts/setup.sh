#!/usr/bin/env bash
# One-time setup of a fresh machine for memscope (idempotent; CI runs it too, from .ci/run): the
# Rust components CI uses, NVRTC 13.0 from PyPI so every CUDA kernel can be compiled (not run) on a
# machine with no GPU, Debian's Chromium for the browser test, and the `memscope` binary itself on
# PATH (cargo install into ~/.cargo/bin, built in this repository's target/ so later builds reuse it).
# Each step says what it does; the build is the longest one on a fresh clone.
set -euo pipefail
cd "$(dirname "$0")/.."
step() { echo "setup: $*" >&2; }
step "rustfmt and clippy (rustup components)"
rustup component add rustfmt clippy >/dev/null 2>&1 || true
if ! python3 -c 'import nvidia.cu13' >/dev/null 2>&1 && [ ! -d "$(python3 -c 'import site;print(site.getsitepackages()[0])')/nvidia/cu13/lib" ]; then
  step "NVRTC 13.0 from PyPI (nvidia-cuda-nvrtc), for the kernel-compile tests"
  python3 -m pip install --quiet --disable-pip-version-check 'nvidia-cuda-nvrtc==13.0.88' || \
    echo "setup: could not install nvidia-cuda-nvrtc; kernel-compile tests will be skipped" >&2
else
  step "NVRTC 13.0: already installed"
fi
# Headless Chromium for the browser test of the HTML report and the vadd animation
# (crates/cli/tests/browser.rs); skipped when already installed or when apt is not available.
if ! command -v chromium >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
  step "Chromium from Debian (apt-get), for the browser test"
  { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; } >/dev/null 2>&1 || \
    echo "setup: could not install chromium; the browser test will be skipped" >&2
else
  step "Chromium: $(command -v chromium || echo 'apt-get not available, the browser test will be skipped')"
fi
step "building memscope (release) and installing it into ${CARGO_HOME:-$HOME/.cargo}/bin"
cargo install --locked --force --path crates/cli --target-dir target
if command -v memscope >/dev/null 2>&1; then
  step "done: $(memscope --version) at $(command -v memscope)"
else
  step "done; add ${CARGO_HOME:-$HOME/.cargo}/bin to PATH to run \`memscope\` (or use target/release/memscope)"
fi
