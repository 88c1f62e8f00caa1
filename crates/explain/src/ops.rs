//! FLOPs and minimum bytes of the framework ops `explain` knows, from the shapes and types a
//! PyTorch trace records (`Input Dims`, `Input type`, `Concrete Inputs`): products, attention,
//! elementwise and activation ops, norms, softmax, copies, index/gather/cat and reductions, with
//! seed 003's counting rule (every operand read once, every result written once; a broadcast
//! operand counted at its own size). An op not listed gets the bytes of its input tensors and is
//! marked estimated (docs/MODEL.md, "Real programs").

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// An element type as the trace names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dtype {
    Fp64,
    Fp32,
    Fp16,
    Bf16,
    Fp8,
    I64,
    I32,
    I16,
    I8,
    Bool,
}

impl Dtype {
    /// The trace's type name (`float`, `c10::Half`, ...); None for scalars, lists and unknown names.
    pub fn parse(s: &str) -> Option<Dtype> {
        Some(match s {
            "double" => Dtype::Fp64,
            "float" => Dtype::Fp32,
            "c10::Half" | "Half" | "half" => Dtype::Fp16,
            "c10::BFloat16" | "BFloat16" | "bfloat16" => Dtype::Bf16,
            s if s.starts_with("c10::Float8") => Dtype::Fp8,
            "long int" | "long" | "int64_t" => Dtype::I64,
            "int" => Dtype::I32,
            "short int" | "short" => Dtype::I16,
            "signed char" | "unsigned char" | "c10::qint8" => Dtype::I8,
            "bool" => Dtype::Bool,
            _ => return None,
        })
    }
    pub fn size_bytes(self) -> f64 {
        match self {
            Dtype::Fp64 | Dtype::I64 => 8.0,
            Dtype::Fp32 | Dtype::I32 => 4.0,
            Dtype::Fp16 | Dtype::Bf16 | Dtype::I16 => 2.0,
            Dtype::Fp8 | Dtype::I8 | Dtype::Bool => 1.0,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Dtype::Fp64 => "fp64",
            Dtype::Fp32 => "fp32",
            Dtype::Fp16 => "fp16",
            Dtype::Bf16 => "bf16",
            Dtype::Fp8 => "fp8",
            Dtype::I64 => "i64",
            Dtype::I32 => "i32",
            Dtype::I16 => "i16",
            Dtype::I8 => "i8",
            Dtype::Bool => "bool",
        }
    }
}

/// What kind of work an op is (the classes `explain` ranks and `predict` scales).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OpClass {
    Matmul,
    Attention,
    Elementwise,
    Activation,
    Norm,
    Softmax,
    Copy,
    Index,
    Reduction,
    Memcpy,
    Memset,
    Other,
}

impl OpClass {
    pub fn name(self) -> &'static str {
        match self {
            OpClass::Matmul => "matmul",
            OpClass::Attention => "attention",
            OpClass::Elementwise => "elementwise",
            OpClass::Activation => "activation",
            OpClass::Norm => "norm",
            OpClass::Softmax => "softmax",
            OpClass::Copy => "copy",
            OpClass::Index => "index",
            OpClass::Reduction => "reduction",
            OpClass::Memcpy => "memcpy",
            OpClass::Memset => "memset",
            OpClass::Other => "other",
        }
    }
}

/// A (batched) matrix product's shape: batch x (M x K) @ (K x N).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Gemm {
    pub batch: u64,
    pub m: u64,
    pub k: u64,
    pub n: u64,
    pub dtype: Dtype,
}

impl Gemm {
    /// The alignment rule for cuBLAS's vectorised tensor-core kernels: rows of A (K elements) and
    /// of B and C (N elements) a multiple of 16 bytes (8 fp16/bf16 elements).
    pub fn aligned_16_bytes(&self) -> bool {
        let per = (16.0 / self.dtype.size_bytes()).max(1.0) as u64;
        self.k.is_multiple_of(per) && self.n.is_multiple_of(per)
    }
}

/// An op's work as `explain` counts it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpCost {
    pub class: OpClass,
    pub flops: f64,
    pub bytes: f64,
    /// The element type of its first tensor (None when it has none).
    pub dtype: Option<Dtype>,
    /// Set for matrix products and attention (which may use tensor cores).
    pub gemm: Option<Gemm>,
    /// False when the op is not one memscope knows: then `bytes` are its input tensors' and
    /// `flops` 0.
    pub known: bool,
}

/// One input of an op: a tensor, a list of tensors, or something else (scalar, int list, None).
#[derive(Debug, Clone, PartialEq)]
enum Input {
    Tensor(Vec<u64>, Dtype),
    List(Vec<Vec<u64>>),
    Other,
}

fn shape(v: &Value) -> Option<Vec<u64>> {
    v.as_array()?.iter().map(|d| d.as_u64()).collect()
}

fn inputs(dims: &[Value], types: &[String]) -> Vec<Input> {
    dims.iter()
        .enumerate()
        .map(|(i, d)| {
            let ty = types.get(i).map(String::as_str).unwrap_or("");
            match (shape(d), Dtype::parse(ty)) {
                (Some(s), Some(t)) => Input::Tensor(s, t),
                _ => match d.as_array() {
                    Some(a) if !a.is_empty() && a.iter().all(|x| x.is_array()) && ty.contains("List") => {
                        Input::List(a.iter().filter_map(shape).collect())
                    }
                    _ => Input::Other,
                },
            }
        })
        .collect()
}

fn numel(s: &[u64]) -> f64 {
    s.iter().map(|&d| d as f64).product()
}

/// Broadcast of two shapes (numpy rule); None when they do not broadcast.
fn broadcast(a: &[u64], b: &[u64]) -> Option<Vec<u64>> {
    let n = a.len().max(b.len());
    let mut out = vec![0; n];
    for (i, o) in out.iter_mut().enumerate() {
        let x = if i + a.len() >= n { a[i + a.len() - n] } else { 1 };
        let y = if i + b.len() >= n { b[i + b.len() - n] } else { 1 };
        *o = if x == y || y == 1 {
            x
        } else if x == 1 {
            y
        } else {
            return None;
        };
    }
    Some(out)
}

fn tensors(ins: &[Input]) -> Vec<(&[u64], Dtype)> {
    ins.iter()
        .filter_map(|i| match i {
            Input::Tensor(s, t) => Some((s.as_slice(), *t)),
            _ => None,
        })
        .collect()
}

fn tensor_bytes(ins: &[Input]) -> f64 {
    tensors(ins).iter().map(|(s, t)| numel(s) * t.size_bytes()).sum()
}

fn tensor_at(ins: &[Input], i: usize) -> Option<(&[u64], Dtype)> {
    match ins.get(i)? {
        Input::Tensor(s, t) => Some((s.as_slice(), *t)),
        _ => None,
    }
}

fn cost(class: OpClass, flops: f64, bytes: f64, dtype: Option<Dtype>) -> OpCost {
    OpCost { class, flops, bytes, dtype, gemm: None, known: true }
}

fn gemm_cost(g: Gemm, extra_bytes: f64, extra_flops: f64, a_bytes: f64, b_bytes: f64) -> OpCost {
    let s = g.dtype.size_bytes();
    let out = (g.batch * g.m * g.n) as f64 * s;
    OpCost {
        class: OpClass::Matmul,
        flops: 2.0 * (g.batch * g.m * g.k * g.n) as f64 + extra_flops,
        bytes: a_bytes + b_bytes + out + extra_bytes,
        dtype: Some(g.dtype),
        gemm: Some(g),
        known: true,
    }
}

/// A product of A (..., M, K) and B (..., K, N), batch dimensions broadcast; a 1-D operand is a
/// vector.
fn matmul(a: (&[u64], Dtype), b: (&[u64], Dtype)) -> Option<(Gemm, f64, f64)> {
    let (sa, t) = a;
    let (sb, _) = b;
    if sa.is_empty() || sb.is_empty() {
        return None;
    }
    let (m, k) = if sa.len() == 1 { (1, sa[0]) } else { (sa[sa.len() - 2], sa[sa.len() - 1]) };
    let n = if sb.len() == 1 { 1 } else { sb[sb.len() - 1] };
    let ba = if sa.len() > 2 { &sa[..sa.len() - 2] } else { &[][..] };
    let bb = if sb.len() > 2 { &sb[..sb.len() - 2] } else { &[][..] };
    let batch = broadcast(ba, bb)?.iter().product::<u64>();
    let s = t.size_bytes();
    Some((Gemm { batch, m, k, n, dtype: t }, numel(sa) * s, numel(sb) * s))
}

/// Attention from q, k, v shapes in (batch, heads, length, dim) order.
fn attention(q: &[u64], k: &[u64], v: &[u64], t: Dtype, causal: bool, extra_bytes: f64) -> Option<OpCost> {
    if q.len() != 4 || k.len() != 4 || v.len() != 4 {
        return None;
    }
    let (b, h, l, e) = (q[0], q[1], q[2], q[3]);
    let (s_len, ev) = (k[2], v[3]);
    let s = t.size_bytes();
    let mut flops = 2.0 * (b * h * l * s_len) as f64 * (e + ev) as f64;
    if causal && l > 1 {
        flops /= 2.0;
    }
    let out = (b * h * l * ev) as f64 * s;
    Some(OpCost {
        class: OpClass::Attention,
        flops,
        bytes: (numel(q) + numel(k) + numel(v)) * s + out + extra_bytes,
        dtype: Some(t),
        gemm: Some(Gemm { batch: b * h, m: l, k: e, n: s_len, dtype: t }),
        known: true,
    })
}

/// (batch, length, heads, dim) to (batch, heads, length, dim).
fn blhe(s: &[u64]) -> Vec<u64> {
    if s.len() == 4 {
        vec![s[0], s[2], s[1], s[3]]
    } else {
        s.to_vec()
    }
}

const BINARY: [&str; 26] = [
    "add",
    "sub",
    "mul",
    "div",
    "rsub",
    "where",
    "maximum",
    "minimum",
    "pow",
    "masked_fill",
    "addcmul",
    "addcdiv",
    "lerp",
    "clamp",
    "clamp_min",
    "clamp_max",
    "fmod",
    "remainder",
    "eq",
    "ne",
    "lt",
    "gt",
    "le",
    "ge",
    "logical_and",
    "logical_or",
];
const COMPARISONS: [&str; 8] = ["eq", "ne", "lt", "gt", "le", "ge", "logical_and", "logical_or"];
const UNARY: [&str; 31] = [
    "gelu",
    "relu",
    "silu",
    "tanh",
    "sigmoid",
    "exp",
    "log",
    "neg",
    "rsqrt",
    "sqrt",
    "abs",
    "reciprocal",
    "sin",
    "cos",
    "erf",
    "mish",
    "hardswish",
    "hardsigmoid",
    "leaky_relu",
    "elu",
    "softplus",
    "square",
    "triu",
    "tril",
    "native_dropout",
    "dropout",
    "sign",
    "floor",
    "ceil",
    "round",
    "logical_not",
];
const REDUCTIONS: [&str; 18] = [
    "sum",
    "mean",
    "amax",
    "amin",
    "max",
    "min",
    "argmax",
    "argmin",
    "norm",
    "linalg_vector_norm",
    "var",
    "std",
    "var_mean",
    "std_mean",
    "prod",
    "all",
    "any",
    "logsumexp",
];

/// The op's name without its namespace and in-place suffix, and whether it is in place.
fn base_name(name: &str) -> (&str, bool) {
    let n = name.rsplit("::").next().unwrap_or(name);
    match n.strip_suffix('_') {
        Some(b) if !b.is_empty() && !b.ends_with('_') => (b, true),
        _ => (n, false),
    }
}

fn flag(concrete: &[String], i: usize) -> bool {
    concrete.get(i).map(|s| s.eq_ignore_ascii_case("true")).unwrap_or(false)
}

fn int_at(concrete: &[String], i: usize) -> Option<i64> {
    concrete.get(i)?.trim().parse().ok()
}

/// The work of a known op, or None when memscope does not know it (or its shapes are not
/// recorded).
pub fn known_cost(name: &str, dims: &[Value], types: &[String], concrete: &[String]) -> Option<OpCost> {
    known_cost_with(name, dims, types, concrete, None)
}

/// `known_cost`, with the element type of tensor lists whose type the trace does not record
/// (`TensorList`): `list_dtype`, the trace's most common type.
pub fn known_cost_with(
    name: &str,
    dims: &[Value],
    types: &[String],
    concrete: &[String],
    list_dtype: Option<Dtype>,
) -> Option<OpCost> {
    let ins = inputs(dims, types);
    let ts = tensors(&ins);
    let first = ts.first().map(|t| t.1);
    let (base, in_place) = base_name(name);
    let total_in = tensor_bytes(&ins);
    match base {
        "mm" | "matmul" | "bmm" | "mv" | "dot" => {
            let (g, a, b) = matmul(tensor_at(&ins, 0)?, tensor_at(&ins, 1)?)?;
            Some(gemm_cost(g, 0.0, 0.0, a, b))
        }
        "addmm" | "baddbmm" | "addmv" | "_addmm_activation" => {
            let (bias, bt) = tensor_at(&ins, 0)?;
            let (g, a, b) = matmul(tensor_at(&ins, 1)?, tensor_at(&ins, 2)?)?;
            let out = (g.batch * g.m * g.n) as f64;
            Some(gemm_cost(g, numel(bias) * bt.size_bytes(), out, a, b))
        }
        "linear" => {
            let (x, t) = tensor_at(&ins, 0)?;
            let (w, _) = tensor_at(&ins, 1)?;
            if x.is_empty() || w.len() != 2 {
                return None;
            }
            let k = *x.last()?;
            let g = Gemm { batch: 1, m: (numel(x) / k.max(1) as f64) as u64, k, n: w[0], dtype: t };
            let bias = tensor_at(&ins, 2).map(|(b, bt)| numel(b) * bt.size_bytes()).unwrap_or(0.0);
            let s = t.size_bytes();
            Some(gemm_cost(g, bias, 0.0, numel(x) * s, numel(w) * s))
        }
        "scaled_dot_product_attention"
        | "_scaled_dot_product_flash_attention"
        | "_scaled_dot_product_cudnn_attention" => {
            let ((q, t), (k, _), (v, _)) = (tensor_at(&ins, 0)?, tensor_at(&ins, 1)?, tensor_at(&ins, 2)?);
            let mask = if base == "scaled_dot_product_attention" { tensor_at(&ins, 3) } else { None };
            let mask_bytes = mask.map(|(m, mt)| numel(m) * mt.size_bytes()).unwrap_or(0.0);
            attention(q, k, v, t, concrete.iter().any(|c| c.eq_ignore_ascii_case("true")), mask_bytes)
        }
        "_scaled_dot_product_efficient_attention" => {
            let ((q, t), (k, _), (v, _)) = (tensor_at(&ins, 0)?, tensor_at(&ins, 1)?, tensor_at(&ins, 2)?);
            let bias = tensor_at(&ins, 3).map(|(m, mt)| numel(m) * mt.size_bytes()).unwrap_or(0.0);
            attention(q, k, v, t, flag(concrete, 6), bias)
        }
        "_flash_attention_forward" | "_efficient_attention_forward" => {
            let ((q, t), (k, _)) = (tensor_at(&ins, 0)?, tensor_at(&ins, 1)?);
            let v = if base == "_flash_attention_forward" { tensor_at(&ins, 2)?.0 } else { k };
            attention(&blhe(q), &blhe(k), &blhe(v), t, concrete.iter().any(|c| c.eq_ignore_ascii_case("true")), 0.0)
        }
        "layer_norm" | "native_layer_norm" | "rms_norm" | "_fused_rms_norm" | "group_norm" | "native_group_norm" => {
            let (x, t) = tensor_at(&ins, 0)?;
            let n = numel(x);
            Some(cost(OpClass::Norm, 8.0 * n, total_in + n * t.size_bytes(), Some(t)))
        }
        "softmax" | "_softmax" | "log_softmax" | "_log_softmax" | "_safe_softmax" => {
            let (x, t) = tensor_at(&ins, 0)?;
            let n = numel(x);
            Some(cost(OpClass::Softmax, 5.0 * n, 2.0 * n * t.size_bytes(), Some(t)))
        }
        "copy" => {
            let (dst, dt) = tensor_at(&ins, 0)?;
            let (src, st) = tensor_at(&ins, 1)?;
            Some(cost(OpClass::Copy, 0.0, numel(dst) * dt.size_bytes() + numel(src) * st.size_bytes(), Some(dt)))
        }
        "clone" | "contiguous" => {
            let (x, t) = tensor_at(&ins, 0)?;
            Some(cost(OpClass::Copy, 0.0, 2.0 * numel(x) * t.size_bytes(), Some(t)))
        }
        "fill" | "zero" => {
            let (x, t) = tensor_at(&ins, 0)?;
            Some(cost(OpClass::Copy, 0.0, numel(x) * t.size_bytes(), Some(t)))
        }
        "embedding" => {
            let (w, t) = tensor_at(&ins, 0)?;
            let (idx, it) = tensor_at(&ins, 1)?;
            let out = numel(idx) * *w.last()? as f64 * t.size_bytes();
            Some(cost(OpClass::Index, 0.0, 2.0 * out + numel(idx) * it.size_bytes(), Some(t)))
        }
        "index_select" => {
            let (x, t) = tensor_at(&ins, 0)?;
            let (idx, it) = tensor_at(&ins, 2)?;
            let dim = int_at(concrete, 1).unwrap_or(0);
            let d = if dim < 0 { x.len() as i64 + dim } else { dim } as usize;
            let rows = numel(x) / (*x.get(d)?).max(1) as f64;
            let out = rows * numel(idx) * t.size_bytes();
            Some(cost(OpClass::Index, 0.0, 2.0 * out + numel(idx) * it.size_bytes(), Some(t)))
        }
        "gather" => {
            let (_, t) = tensor_at(&ins, 0)?;
            let (idx, it) = tensor_at(&ins, 2)?;
            Some(cost(OpClass::Index, 0.0, numel(idx) * (2.0 * t.size_bytes() + it.size_bytes()), Some(t)))
        }
        "cat" | "stack" => {
            let list = ins.iter().find_map(|i| match i {
                Input::List(l) => Some(l),
                _ => None,
            })?;
            let t = types.iter().find_map(|s| Dtype::parse(s)).or(list_dtype);
            let elem = t.map(Dtype::size_bytes)?;
            let n: f64 = list.iter().map(|s| numel(s)).sum();
            Some(cost(OpClass::Index, 0.0, 2.0 * n * elem, t))
        }
        b if REDUCTIONS.contains(&b) => {
            let (x, t) = tensor_at(&ins, 0)?;
            Some(cost(OpClass::Reduction, numel(x), numel(x) * t.size_bytes(), Some(t)))
        }
        b if UNARY.contains(&b) => {
            let (x, t) = tensor_at(&ins, 0)?;
            let n = numel(x);
            let fl = if matches!(b, "gelu" | "silu" | "mish" | "erf" | "softplus") { 8.0 } else { 1.0 };
            Some(cost(OpClass::Activation, fl * n, 2.0 * n * t.size_bytes(), Some(t)))
        }
        b if BINARY.contains(&b) => {
            let (x0, t0) = *ts.first()?;
            let mut out = x0.to_vec();
            for (s, _) in &ts[1..] {
                out = broadcast(&out, s)?;
            }
            let out_elem = if COMPARISONS.contains(&b) { 1.0 } else { t0.size_bytes() };
            let write = if in_place { numel(x0) * t0.size_bytes() } else { numel(&out) * out_elem };
            Some(cost(OpClass::Elementwise, numel(&out), total_in + write, first))
        }
        _ => None,
    }
}

/// An op memscope does not know: the bytes of its input tensors, no FLOPs, marked estimated.
pub fn estimated_cost(dims: &[Value], types: &[String]) -> OpCost {
    let ins = inputs(dims, types);
    OpCost {
        class: OpClass::Other,
        flops: 0.0,
        bytes: tensor_bytes(&ins),
        dtype: tensors(&ins).first().map(|t| t.1),
        gemm: None,
        known: false,
    }
}

/// A class from a kernel's name alone (kernels with no framework op, as in a CUDA-graph replay).
pub fn class_of_kernel(name: &str) -> OpClass {
    let n = name.to_ascii_lowercase();
    let has = |xs: &[&str]| xs.iter().any(|x| n.contains(x));
    if has(&["flash", "fmha", "attention", "sdpa"]) {
        OpClass::Attention
    } else if has(&["gemm", "gemv", "cutlass", "xmma", "cublas", "matmul", "splitk"]) {
        OpClass::Matmul
    } else if has(&["layer_norm", "layernorm", "rms_norm", "rmsnorm", "group_norm"]) {
        OpClass::Norm
    } else if has(&["softmax"]) {
        OpClass::Softmax
    } else if has(&["reduce_kernel", "reduction"]) {
        OpClass::Reduction
    } else if has(&["cat", "index", "gather", "scatter", "embedding"]) {
        OpClass::Index
    } else if has(&["copy", "memcpy"]) {
        OpClass::Copy
    } else if has(&["gelu", "relu", "silu", "tanh", "sigmoid", "exp"]) {
        OpClass::Activation
    } else if has(&["elementwise", "vectorized", "add", "mul", "div", "fill"]) {
        OpClass::Elementwise
    } else {
        OpClass::Other
    }
}

/// Whether a kernel's name says it runs fp32 products on TF32 tensor cores.
pub fn kernel_uses_tf32(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n.contains("tf32") || n.contains("s1688") || n.contains("s16816") || n.contains("tensorop_s")
}
