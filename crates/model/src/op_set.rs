//! The operations the bottleneck model is evaluated on (seed 003): `Op` with its seed-minimum
//! counts, launch class and label; the 58-operation set (29 shapes in fp32 and fp16); the
//! launch-floor operation of each class; the large-size operations of the kernel-efficiency check.
//! Definitions only: memscope-cuda's `ops` runs them on the GPU.

use crate::bottleneck::{self as m, Dtype, OpCost};

/// One operation of the harness.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Op {
    Matmul {
        m: u64,
        k: u64,
        n: u64,
        dtype: Dtype,
    },
    Add {
        n: u64,
        dtype: Dtype,
    },
    Mul {
        n: u64,
        dtype: Dtype,
    },
    Fma {
        n: u64,
        dtype: Dtype,
    },
    Gelu {
        n: u64,
        dtype: Dtype,
    },
    LayerNorm {
        rows: u64,
        cols: u64,
        dtype: Dtype,
    },
    Softmax {
        rows: u64,
        cols: u64,
        dtype: Dtype,
    },
    /// Decode attention, head dim 64, a cache of exactly `tokens` per sequence (fp32 only).
    Attention {
        batch: u64,
        heads: u64,
        tokens: u64,
        dtype: Dtype,
    },
}

impl Op {
    pub fn dtype(&self) -> Dtype {
        match *self {
            Op::Matmul { dtype, .. }
            | Op::Add { dtype, .. }
            | Op::Mul { dtype, .. }
            | Op::Fma { dtype, .. }
            | Op::Gelu { dtype, .. }
            | Op::LayerNorm { dtype, .. }
            | Op::Softmax { dtype, .. }
            | Op::Attention { dtype, .. } => dtype,
        }
    }
    pub fn label(&self) -> String {
        let d = self.dtype().name();
        match *self {
            Op::Matmul { m, k, n, .. } => format!("matmul {m}x{k} @ {k}x{n} {d}"),
            Op::Add { n, .. } => format!("add {n} {d}"),
            Op::Mul { n, .. } => format!("mul {n} {d}"),
            Op::Fma { n, .. } => format!("fma x*y+z {n} {d}"),
            Op::Gelu { n, .. } => format!("gelu {n} {d}"),
            Op::LayerNorm { rows, cols, .. } => format!("layernorm {rows}x{cols} {d}"),
            Op::Softmax { rows, cols, .. } => format!("softmax {rows}x{cols} {d}"),
            Op::Attention { batch, heads, tokens, .. } => format!("attention B={batch} h={heads} T={tokens} d=64 {d}"),
        }
    }
    /// The seed's minimum FLOPs and bytes.
    pub fn cost(&self) -> OpCost {
        match *self {
            Op::Matmul { m, k, n, dtype } => m::matmul_cost(m, k, n, dtype),
            Op::Add { n, dtype } | Op::Mul { n, dtype } => m::add_cost(n, dtype),
            Op::Fma { n, dtype } => m::fused_mul_add_cost(n, dtype),
            Op::Gelu { n, dtype } => m::gelu_cost(n, dtype),
            Op::LayerNorm { rows, cols, dtype } => m::layernorm_cost(rows, cols, dtype),
            Op::Softmax { rows, cols, dtype } => m::softmax_cost(rows, cols, dtype),
            Op::Attention { batch, heads, tokens, dtype } => m::decode_attention_cost(batch, heads, tokens, 64, dtype),
        }
    }
    /// The key of its launch floor.
    pub fn class(&self) -> String {
        match self {
            Op::Matmul { dtype, .. } => format!("matmul.{}", dtype.name()),
            Op::Add { .. } => "add".into(),
            Op::Mul { .. } => "mul".into(),
            Op::Fma { .. } => "fma".into(),
            Op::Gelu { .. } => "gelu".into(),
            Op::LayerNorm { .. } => "layernorm".into(),
            Op::Softmax { .. } => "softmax".into(),
            Op::Attention { .. } => "attention".into(),
        }
    }
    pub fn kind(&self) -> &'static str {
        match self {
            Op::Matmul { .. } => "matmul",
            Op::Add { .. } => "add",
            Op::Mul { .. } => "mul",
            Op::Fma { .. } => "fma",
            Op::Gelu { .. } => "gelu",
            Op::LayerNorm { .. } => "layernorm",
            Op::Softmax { .. } => "softmax",
            Op::Attention { .. } => "attention",
        }
    }
}

/// The 58 operations (29 shapes x fp32, fp16).
pub fn seed_operations() -> Vec<Op> {
    let mut ops = Vec::new();
    for dtype in [Dtype::Fp32, Dtype::Fp16] {
        for (mm, k, n) in [
            (1, 768, 3072),
            (1, 768, 50257),
            (1, 3072, 768),
            (32, 768, 3072),
            (512, 768, 3072),
            (512, 512, 512),
            (1024, 1024, 1024),
            (2048, 2048, 2048),
            (4096, 4096, 4096),
        ] {
            ops.push(Op::Matmul { m: mm, k, n, dtype });
        }
        for n in [1024u64, 1 << 16, 1 << 20, 1 << 24, 1 << 27] {
            ops.push(Op::Add { n, dtype });
        }
        for n in [1024u64, 1 << 16, 1 << 20, 1 << 24, 1 << 27] {
            ops.push(Op::Gelu { n, dtype });
        }
        for rows in [1u64, 16, 256, 4096, 16384] {
            ops.push(Op::LayerNorm { rows, cols: 768, dtype });
        }
        for rows in [1u64, 16, 256, 4096, 16384] {
            ops.push(Op::Softmax { rows, cols: 1024, dtype });
        }
    }
    ops
}

/// The operation of `kind` whose largest buffer is at least `bytes` (the 58 set's row lengths: 768
/// for layer norm, 1,024 for softmax; attention with 12 heads, 128 tokens, head dim 64, batch grown).
pub fn large_op(kind: &str, dtype: Dtype, bytes: u64) -> Op {
    let s = dtype.size_bytes() as u64;
    match kind {
        "add" => Op::Add { n: bytes.div_ceil(s), dtype },
        "gelu" => Op::Gelu { n: bytes.div_ceil(s), dtype },
        "layernorm" => Op::LayerNorm { rows: bytes.div_ceil(768 * s), cols: 768, dtype },
        "softmax" => Op::Softmax { rows: bytes.div_ceil(1024 * s), cols: 1024, dtype },
        _ => Op::Attention { batch: bytes.div_ceil(12 * 128 * 64 * s), heads: 12, tokens: 128, dtype },
    }
}

/// The launch-floor operation of each class (seed 003's smallest operation of each kind), in the
/// order of `memscope_core::keys::LAUNCH_CLASSES`.
pub fn floor_ops() -> Vec<(&'static str, Op)> {
    vec![
        ("matmul.fp32", Op::Matmul { m: 8, k: 8, n: 8, dtype: Dtype::Fp32 }),
        ("matmul.fp16", Op::Matmul { m: 8, k: 8, n: 8, dtype: Dtype::Fp16 }),
        ("add", Op::Add { n: 1024, dtype: Dtype::Fp32 }),
        ("mul", Op::Mul { n: 1024, dtype: Dtype::Fp32 }),
        ("fma", Op::Fma { n: 1024, dtype: Dtype::Fp32 }),
        ("gelu", Op::Gelu { n: 1024, dtype: Dtype::Fp32 }),
        ("layernorm", Op::LayerNorm { rows: 4, cols: 768, dtype: Dtype::Fp32 }),
        ("softmax", Op::Softmax { rows: 4, cols: 1024, dtype: Dtype::Fp32 }),
        ("attention", Op::Attention { batch: 1, heads: 1, tokens: 16, dtype: Dtype::Fp32 }),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floor_ops_cover_the_launch_classes_in_order_with_their_own_class() {
        let classes: Vec<&str> = floor_ops().iter().map(|(c, _)| *c).collect();
        assert_eq!(classes, memscope_core::keys::LAUNCH_CLASSES);
        for (c, op) in floor_ops() {
            assert_eq!(op.class(), c, "{}", op.label());
        }
    }
}
