#!/usr/bin/env bash
# One-time setup of a fresh machine for memscope (idempotent): the Rust components CI uses, and
# NVRTC 13.0 from PyPI so every CUDA kernel can be compiled (not run) on a machine with no GPU.
set -euo pipefail
rustup component add rustfmt clippy >/dev/null 2>&1 || true
if ! python3 -c 'import nvidia.cu13' >/dev/null 2>&1 && [ ! -d "$(python3 -c 'import site;print(site.getsitepackages()[0])')/nvidia/cu13/lib" ]; then
  python3 -m pip install --quiet --disable-pip-version-check 'nvidia-cuda-nvrtc==13.0.88' || \
    echo "setup: could not install nvidia-cuda-nvrtc; kernel-compile tests will be skipped" >&2
fi
# Headless Chromium for the browser test of the HTML report and the vadd animation
# (crates/cli/tests/browser.rs); skipped when already installed or when apt is not available.
if ! command -v chromium >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
  { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; } >/dev/null 2>&1 || \
    echo "setup: could not install chromium; the browser test will be skipped" >&2
fi
