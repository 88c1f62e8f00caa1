#!/usr/bin/env bash
# One-time setup of a fresh machine for memscope (idempotent; CI runs it too, from .ci/run): the
# Rust components CI uses, NVRTC 13.0 from PyPI so every CUDA kernel can be compiled (not run) on a
# machine with no GPU, Debian's Chromium for the browser test, and the `memscope` binary itself on
# PATH (copied into ~/.cargo/bin from this repository's target/, where later builds reuse it).
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
# (crates/cli/tests/cli/browser.rs); skipped when already installed or when apt is not available.
if ! command -v chromium >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
  step "Chromium from Debian (apt-get), for the browser test"
  { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; } >/dev/null 2>&1 || \
    echo "setup: could not install chromium; the browser test will be skipped" >&2
else
  step "Chromium: $(command -v chromium || echo 'apt-get not available, the browser test will be skipped')"
fi
# One release build serves both the binary and the README's test command (scripts/test.sh): the
# binary is built here as `cargo test --workspace --release` builds it (the workspace's features,
# dev-dependencies included), so the tests reuse every artifact instead of building the crates a
# second time with other features; then it is copied where `cargo install` would put it.
bin_dir="${CARGO_INSTALL_ROOT:-${CARGO_HOME:-$HOME/.cargo}}/bin"
step "building memscope and the tests (release) in target/; installing memscope into $bin_dir"
cargo test --workspace --release --locked --no-run
mkdir -p "$bin_dir" && install -m 755 target/release/memscope "$bin_dir/memscope"
if command -v memscope >/dev/null 2>&1; then
  step "done: $(memscope --version) at $(command -v memscope)"
else
  step "done; add $bin_dir to PATH to run \`memscope\` (or use target/release/memscope)"
fi
