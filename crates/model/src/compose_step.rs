//! The operation counts of a GPT-2-shaped decode step as `memscope batch` runs it (docs/MODEL.md): the
//! kernel sequence (per layer: layer norm, QKV product, attention over a static cache, output
//! product, residual add, layer norm, MLP products around a GELU, residual add; then the final layer
//! norm and the LM head), each kernel's FLOPs, DRAM and L2 bytes and bytes in flight, for any width,
//! depth, precision, batch and context; the matrix-product calibration shapes (none of them a
//! step's shape); and the seed-003 figures of the step for its two compositions. Pure.

use crate::bottleneck::{DecodeModel, Dtype};
use crate::compose::{KernelCount, LaunchPath, MatmulShape};
use serde::{Deserialize, Serialize};

/// A GPT-2-shaped decoder: head dimension 64.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecodeShape {
    pub name: &'static str,
    pub layers: u64,
    pub width: u64,
    pub heads: u64,
    pub ff: u64,
    pub vocab: u64,
}

pub const HEAD_DIM: u64 = 64;

pub const GPT2_SMALL_SHAPE: DecodeShape =
    DecodeShape { name: "gpt2-small", layers: 12, width: 768, heads: 12, ff: 3072, vocab: 50257 };
/// GPT-2 medium's shape (24 layers x 1024 wide, 16 heads), for the out-of-sample check.
pub const GPT2_MEDIUM_SHAPE: DecodeShape =
    DecodeShape { name: "gpt2-medium", layers: 24, width: 1024, heads: 16, ff: 4096, vocab: 50257 };

/// The composition's sweep (docs/MODEL.md).
pub const SWEEP_BATCHES: [u64; 10] = [1, 2, 8, 32, 64, 128, 192, 256, 384, 512];
pub const SWEEP_CONTEXTS: [u64; 2] = [128, 1024];
/// The out-of-sample model's batches (context 128; its KV cache at 512 x 1,024 would not fit).
pub const MEDIUM_BATCHES: [u64; 6] = [1, 8, 32, 64, 128, 256];
pub const MEDIUM_CONTEXT: u64 = 128;

impl DecodeShape {
    /// Weights the step's kernels read, bytes (no embeddings, no biases: not run).
    pub fn weights_bytes(&self, dtype: Dtype) -> f64 {
        let (d, f) = (self.width, self.ff);
        let per_layer = d * 3 * d + d * d + 2 * d * f;
        dtype.size_bytes() * (self.layers * per_layer + d * self.vocab) as f64
            + 4.0 * (self.layers * 4 + 2) as f64 * d as f64
    }
    /// KV-cache bytes per cached token per sequence.
    pub fn cache_bytes_per_token(&self, dtype: Dtype) -> f64 {
        (self.layers * 2 * self.width) as f64 * dtype.size_bytes()
    }
    /// The seed-003 figures of this step: weights, cache per token, 2 x product weights FLOPs per token.
    pub fn seed_model(&self, dtype: Dtype) -> DecodeModel {
        let (d, f) = (self.width, self.ff);
        let params = self.layers * (4 * d * d + 2 * d * f) + d * self.vocab;
        DecodeModel {
            name: self.name,
            weights_bytes: self.weights_bytes(dtype),
            cache_bytes_per_token: self.cache_bytes_per_token(dtype),
            flops_per_token: 2.0 * params as f64,
        }
    }
    /// The step's launch classes and counts (for the seed's launch floor).
    pub fn launch_classes(&self, dtype: Dtype) -> Vec<(String, u32)> {
        let l = self.layers as u32;
        vec![
            (format!("matmul.{}", dtype.name()), 4 * l + 1),
            ("layernorm".into(), 2 * l + 1),
            ("attention".into(), l),
            ("add".into(), 2 * l),
            ("gelu".into(), l),
        ]
    }
    /// The step's matrix products at batch `b` (in launch order, one per kind).
    pub fn matmul_shapes(&self, b: u64, dtype: Dtype) -> [MatmulShape; 5] {
        let (d, f) = (self.width, self.ff);
        let s = |k, n| MatmulShape { m: b, k, n, dtype };
        [s(d, 3 * d), s(d, d), s(d, f), s(f, d), s(d, self.vocab)]
    }
}

/// Elements per 16-byte vector.
fn vec_elems(dtype: Dtype) -> f64 {
    16.0 / dtype.size_bytes()
}

fn layernorm(rows: u64, cols: u64, dtype: Dtype) -> KernelCount {
    let n = (rows * cols) as f64;
    // One warp per row; every lane issues its row's vectors at once (rows.cu v6/v1).
    KernelCount {
        kind: "layernorm".into(),
        path: LaunchPath::Kernel,
        dtype,
        flops: 8.0 * n,
        dram_bytes: 0.0,
        l2_bytes: 2.0 * n * dtype.size_bytes() + 8.0 * cols as f64,
        bytes_in_flight: n * dtype.size_bytes(),
        load_bytes: 16.0,
        matmul: None,
        reduction_steps: 0.0,
        stream_steps: 0.0,
        blocks: 0.0,
    }
}

fn elementwise(kind: &str, n: u64, inputs: f64, flops_per: f64, dtype: Dtype) -> KernelCount {
    let n = n as f64;
    // One thread per 16-byte vector, one load per input in flight (elementwise.cu).
    KernelCount {
        kind: kind.into(),
        path: LaunchPath::Kernel,
        dtype,
        flops: flops_per * n,
        dram_bytes: 0.0,
        l2_bytes: (inputs + 1.0) * n * dtype.size_bytes(),
        bytes_in_flight: inputs * n / vec_elems(dtype) * 16.0,
        load_bytes: 16.0,
        matmul: None,
        reduction_steps: 0.0,
        stream_steps: 0.0,
        blocks: 0.0,
    }
}

fn attention(b: u64, heads: u64, tokens: u64, dtype: Dtype) -> KernelCount {
    let x = (b * heads * tokens * HEAD_DIM) as f64;
    let s = dtype.size_bytes();
    // One block of 128 threads per (sequence, head): two tokens' rows in flight per half-warp,
    // one vector of 4 elements per lane (attention.cu): a float4 in fp32, an 8-byte uint2 in fp16.
    KernelCount {
        kind: "attention".into(),
        path: LaunchPath::Kernel,
        dtype,
        flops: 4.0 * x,
        dram_bytes: 2.0 * x * s,
        l2_bytes: 2.0 * (b * heads * HEAD_DIM) as f64 * s,
        bytes_in_flight: (b * heads) as f64 * 128.0 * 2.0 * 4.0 * s,
        load_bytes: 4.0 * s,
        matmul: None,
        // Each block: ceil(T / 16) score steps (two keys per half-warp, a 16-lane reduction),
        // then as many value steps (two values per half-warp, accumulated).
        reduction_steps: tokens.div_ceil(16) as f64,
        stream_steps: tokens.div_ceil(16) as f64,
        blocks: (b * heads) as f64,
    }
}

fn matmul(kind: &str, shape: MatmulShape) -> KernelCount {
    let s = shape.dtype.size_bytes();
    KernelCount {
        kind: kind.into(),
        path: LaunchPath::Blas,
        dtype: shape.dtype,
        flops: shape.flops(),
        dram_bytes: (shape.k * shape.n) as f64 * s,
        l2_bytes: ((shape.m * shape.k + shape.m * shape.n) as f64) * s,
        bytes_in_flight: 0.0,
        load_bytes: 16.0,
        matmul: Some(shape),
        reduction_steps: 0.0,
        stream_steps: 0.0,
        blocks: 0.0,
    }
}

/// The step's kernels in launch order.
pub fn step_kernels(shape: &DecodeShape, b: u64, context: u64, dtype: Dtype) -> Vec<KernelCount> {
    let (d, f) = (shape.width, shape.ff);
    let [qkv, out, up, down, head] = shape.matmul_shapes(b, dtype);
    let mut ks = Vec::new();
    for _ in 0..shape.layers {
        ks.push(layernorm(b, d, dtype));
        ks.push(matmul("matmul.qkv", qkv));
        ks.push(attention(b, shape.heads, context, dtype));
        ks.push(matmul("matmul.out", out));
        ks.push(elementwise("add", b * d, 2.0, 1.0, dtype));
        ks.push(layernorm(b, d, dtype));
        ks.push(matmul("matmul.up", up));
        ks.push(elementwise("gelu", b * f, 1.0, 8.0, dtype));
        ks.push(matmul("matmul.down", down));
        ks.push(elementwise("add", b * d, 2.0, 1.0, dtype));
    }
    ks.push(layernorm(b, d, dtype));
    ks.push(matmul("matmul.lm_head", head));
    ks
}

/// The calibration sweep's products: rows 1..640 over nine (K, N) pairs chosen off GPT-2's
/// widths (none is 768, 1,024, 2,304, 3,072, 4,096 or 50,257), one decode-sized LM-head-like;
/// two of them with N not a multiple of 8 (rows not 16-byte aligned in either precision), so an
/// unaligned product (the LM head's 50,257 columns) has a calibration class of its own.
/// `calibration_overlap` checks it against the steps it is used for.
pub fn calibration_shapes(dtype: Dtype) -> Vec<MatmulShape> {
    const ROWS: [u64; 10] = [1, 3, 6, 12, 24, 48, 96, 160, 320, 640];
    const KN: [(u64, u64); 9] = [
        (640, 1920),
        (640, 2560),
        (2560, 640),
        (1280, 1280),
        (1536, 4608),
        (4608, 1536),
        (896, 32000),
        (896, 32003),
        (640, 12289),
    ];
    let mut v = Vec::new();
    for (k, n) in KN {
        for m in ROWS {
            v.push(MatmulShape { m, k, n, dtype });
        }
    }
    v
}

/// The first predicted shape that the calibration contains, if any.
pub fn calibration_overlap(calibration: &[MatmulShape], steps: &[(DecodeShape, Vec<u64>)]) -> Option<MatmulShape> {
    for (shape, batches) in steps {
        for &b in batches {
            for dtype in [Dtype::Fp32, Dtype::Fp16] {
                for s in shape.matmul_shapes(b, dtype) {
                    if calibration.contains(&s) {
                        return Some(s);
                    }
                }
            }
        }
    }
    None
}
