//! Correctness first (METHOD.md): every ops kernel and both cuBLAS paths on small random inputs,
//! against a float64 reference on the host, before anything is timed (seed 003's harness).
//! Sizes are chosen to exercise the scalar tails, the register-cached and the re-read parts of the
//! generic row kernels, partial blocks and (17,000 rows: more than fit on the GPU at once) the
//! prefetch loop of the persistent row kernels, and a token count that is not a multiple of 16 in
//! attention.

use super::device::{Arg, DevBuf, OpsGpu};
use crate::gpu::GpuResult;
use memscope_model::bottleneck::Dtype;
use serde::Serialize;

/// One kernel's check: relative error ||out - ref|| / ||ref||.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub kernel: String,
    pub rel_err: f64,
    pub tolerance: f64,
    pub ok: bool,
}

fn read(g: &OpsGpu, b: &DevBuf, n: usize, dtype: Dtype) -> GpuResult<Vec<f64>> {
    let bytes = g.dtoh_bytes(b, n * dtype.size_bytes() as usize)?;
    Ok(match dtype {
        Dtype::Fp32 => bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64).collect(),
        _ => bytes.chunks_exact(2).map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f64()).collect(),
    })
}

fn rel_err(out: &[f64], reference: &[f64]) -> f64 {
    let num: f64 = out.iter().zip(reference).map(|(a, b)| (a - b) * (a - b)).sum();
    let den: f64 = reference.iter().map(|b| b * b).sum();
    if out.iter().any(|v| !v.is_finite()) {
        return f64::INFINITY;
    }
    (num / den.max(1e-300)).sqrt()
}

fn tol(dtype: Dtype) -> f64 {
    if dtype == Dtype::Fp32 {
        1e-5
    } else {
        2e-3
    }
}

fn gelu(x: f64) -> f64 {
    0.5 * x * (1.0 + (0.7978845608028654 * (x + 0.044715 * x * x * x)).tanh())
}

/// Run every check; the caller fails the command if any is not ok.
pub fn run_all(g: &OpsGpu) -> GpuResult<Vec<Check>> {
    let mut out = Vec::new();
    let mut push = |kernel: String, rel_err: f64, tolerance: f64| {
        out.push(Check { kernel, rel_err, tolerance, ok: rel_err <= tolerance });
    };
    for dtype in [Dtype::Fp32, Dtype::Fp16] {
        let sfx = if dtype == Dtype::Fp32 { "f32" } else { "f16" };
        // Elementwise, n not a multiple of the vector width.
        let n = 100_003u64;
        let (a, b, c) =
            (g.alloc_random(n, dtype, 1, 2.0)?, g.alloc_random(n, dtype, 2, 2.0)?, g.alloc_random(n, dtype, 3, 2.0)?);
        let o = g.alloc(n * dtype.size_bytes() as u64)?;
        let (ha, hb, hc) =
            (read(g, &a, n as usize, dtype)?, read(g, &b, n as usize, dtype)?, read(g, &c, n as usize, dtype)?);
        for (op, f) in [
            ("add", &(|x: f64, y: f64, _z: f64| x + y) as &dyn Fn(f64, f64, f64) -> f64),
            ("mul", &|x, y, _| x * y),
            ("fma", &|x, y, z| x * y + z),
            ("gelu", &|x, _, _| gelu(x)),
        ] {
            let name = format!("{op}_{sfx}");
            let vec = if dtype == Dtype::Fp32 { 4 } else { 8 };
            g.launch(
                &name,
                OpsGpu::blocks(n / vec),
                256,
                0,
                &[Arg::Ptr(a.ptr), Arg::Ptr(b.ptr), Arg::Ptr(c.ptr), Arg::Ptr(o.ptr), Arg::U64(n)],
            )?;
            let got = read(g, &o, n as usize, dtype)?;
            let want: Vec<f64> = (0..n as usize).map(|i| f(ha[i], hb[i], hc[i])).collect();
            push(name, rel_err(&got, &want), tol(dtype));
        }
        // Rows: cols within the register cache and beyond it.
        for (rows, cols) in [(5u64, 768u64), (3, 4096), (37, 1024), (70, 768), (17000, 768)] {
            let x = g.alloc_random(rows * cols, dtype, 4, 3.0)?;
            let y = g.alloc(rows * cols * dtype.size_bytes() as u64)?;
            let gamma = g.alloc_random(cols, Dtype::Fp32, 5, 1.0)?;
            let beta = g.alloc_random(cols, Dtype::Fp32, 6, 1.0)?;
            let hx = read(g, &x, (rows * cols) as usize, dtype)?;
            let (hg, hbeta) =
                (read(g, &gamma, cols as usize, Dtype::Fp32)?, read(g, &beta, cols as usize, Dtype::Fp32)?);
            use super::model_set::launch_rows;
            launch_rows(g, "layernorm", dtype, x.ptr, y.ptr, Some((gamma.ptr, beta.ptr)), rows, cols)?;
            let got = read(g, &y, (rows * cols) as usize, dtype)?;
            let mut want = Vec::new();
            for r in hx.chunks_exact(cols as usize) {
                let mean = r.iter().sum::<f64>() / cols as f64;
                let var = r.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / cols as f64;
                let rstd = 1.0 / (var + 1e-5).sqrt();
                want.extend(r.iter().enumerate().map(|(j, v)| (v - mean) * rstd * hg[j] + hbeta[j]));
            }
            push(format!("layernorm_{sfx} {rows}x{cols}"), rel_err(&got, &want), tol(dtype));
            launch_rows(g, "softmax", dtype, x.ptr, y.ptr, None, rows, cols)?;
            let got = read(g, &y, (rows * cols) as usize, dtype)?;
            let mut want = Vec::new();
            for r in hx.chunks_exact(cols as usize) {
                let m = r.iter().cloned().fold(f64::MIN, f64::max);
                let s: f64 = r.iter().map(|v| (v - m).exp()).sum();
                want.extend(r.iter().map(|v| (v - m).exp() / s));
            }
            push(format!("softmax_{sfx} {rows}x{cols}"), rel_err(&got, &want), tol(dtype));
        }
        // cuBLAS: row-major A[m x k] @ B[k x n].
        let (m, k, nn) = (3u64, 70u64, 50u64);
        let (ma, mb) = (g.alloc_random(m * k, dtype, 7, 1.0)?, g.alloc_random(k * nn, dtype, 8, 1.0)?);
        let mc = g.alloc(m * nn * dtype.size_bytes() as u64)?;
        g.gemm(dtype, m, k, nn, ma.ptr, mb.ptr, mc.ptr)?;
        let (ha, hb) = (read(g, &ma, (m * k) as usize, dtype)?, read(g, &mb, (k * nn) as usize, dtype)?);
        let got = read(g, &mc, (m * nn) as usize, dtype)?;
        let want: Vec<f64> = (0..(m * nn) as usize)
            .map(|idx| {
                let (i, j) = (idx / nn as usize, idx % nn as usize);
                (0..k as usize).map(|p| ha[i * k as usize + p] * hb[p * nn as usize + j]).sum()
            })
            .collect();
        push(format!("cublas gemm {}", dtype.name()), rel_err(&got, &want), tol(dtype));
    }
    // Ceiling patterns: copy must reproduce, fill must write its value, sum must match the host.
    let n = 4096u64 * 4 + 4;
    let src = g.alloc_random(n, Dtype::Fp32, 9, 1.0)?;
    let dst = g.alloc(n * 4)?;
    g.launch("copy_u32", OpsGpu::blocks(n / 4), 256, 0, &[Arg::Ptr(src.ptr), Arg::Ptr(dst.ptr), Arg::U64(n / 4)])?;
    let (hs, hd) = (read(g, &src, n as usize - 4, Dtype::Fp32)?, read(g, &dst, n as usize - 4, Dtype::Fp32)?);
    push("copy_u32".into(), rel_err(&hd, &hs), 0.0);
    g.launch(
        "fill_u32",
        OpsGpu::blocks(n / 4),
        256,
        0,
        &[Arg::Ptr(dst.ptr), Arg::U64(n / 4), Arg::U32(1.5f32.to_bits())],
    )?;
    let hd = read(g, &dst, n as usize - 4, Dtype::Fp32)?;
    push("fill_u32".into(), rel_err(&hd, &vec![1.5; hd.len()]), 0.0);
    let acc = g.alloc(16)?;
    g.htod_bytes(&acc, &[0u8; 16])?;
    g.launch("sum_u32", 4, 256, 0, &[Arg::Ptr(src.ptr), Arg::U64(n / 4), Arg::Ptr(acc.ptr)])?;
    let words: Vec<u32> = g
        .dtoh_bytes(&src, (n / 4 * 16) as usize)?
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let got = u32::from_le_bytes(g.dtoh_bytes(&acc, 4)?[..4].try_into().expect("4 bytes"));
    let want = sum_u32_host(&words, 4 * 256);
    push("sum_u32".into(), if got == want { 0.0 } else { 1.0 }, 0.0);
    out.push(check_attention(g, Dtype::Fp32)?);
    out.push(check_attention(g, Dtype::Fp16)?);
    Ok(out)
}

/// The host twin of sum_u32's per-thread combination (grid-stride with four loads per step).
fn sum_u32_host(words: &[u32], threads: usize) -> u32 {
    let nvec = words.len() / 4;
    let v = |i: usize| (words[4 * i], words[4 * i + 1], words[4 * i + 2], words[4 * i + 3]);
    let mut total = 0u32;
    for t in 0..threads {
        let mut acc = 0u32;
        let mut i = t;
        while i + 3 * threads < nvec {
            let (a, b, c, d) = (v(i), v(i + threads), v(i + 2 * threads), v(i + 3 * threads));
            acc = acc.wrapping_add(a.0 ^ b.1 ^ c.2 ^ d.3);
            acc = acc.wrapping_add(a.1.wrapping_add(b.0).wrapping_add(c.3).wrapping_add(d.2));
            acc ^= a.2.wrapping_add(b.3).wrapping_add(c.0).wrapping_add(d.1);
            acc = acc.wrapping_add(a.3 ^ b.2 ^ c.1 ^ d.0);
            i += 4 * threads;
        }
        while i < nvec {
            let a = v(i);
            acc = acc.wrapping_add(a.0 ^ a.1 ^ a.2 ^ a.3);
            i += threads;
        }
        total = total.wrapping_add(acc);
    }
    total
}

fn check_attention(g: &OpsGpu, dtype: Dtype) -> GpuResult<Check> {
    let (b, h, t, tmax, d) = (2u64, 3u64, 37u64, 40u64, 64u64);
    let qs = 3 * h * d; // q rows strided like the decode step's QKV output
    let q = g.alloc_random(b * qs, dtype, 10, 1.0)?;
    let k = g.alloc_random(b * h * tmax * d, dtype, 11, 1.0)?;
    let v = g.alloc_random(b * h * tmax * d, dtype, 12, 1.0)?;
    let o = g.alloc(b * h * d * dtype.size_bytes() as u64)?;
    let name = if dtype == Dtype::Fp32 { "decode_attention_f32" } else { "decode_attention_f16" };
    let scale = 1.0 / (d as f32).sqrt();
    let smem = (t.next_multiple_of(4) * 4 + 8 * 16 * 16) as u32;
    g.launch(
        name,
        (b * h) as u32,
        128,
        smem,
        &[
            Arg::Ptr(q.ptr),
            Arg::I32(qs as i32),
            Arg::Ptr(k.ptr),
            Arg::Ptr(v.ptr),
            Arg::Ptr(o.ptr),
            Arg::I32(h as i32),
            Arg::I32(t as i32),
            Arg::I32(tmax as i32),
            Arg::F32(scale),
        ],
    )?;
    let (hq, hk, hv) = (
        read(g, &q, (b * qs) as usize, dtype)?,
        read(g, &k, (b * h * tmax * d) as usize, dtype)?,
        read(g, &v, (b * h * tmax * d) as usize, dtype)?,
    );
    let got = read(g, &o, (b * h * d) as usize, dtype)?;
    let (h_, d_, tm) = (h as usize, d as usize, tmax as usize);
    let mut want = Vec::new();
    for bi in 0..b as usize {
        for hi in 0..h_ {
            let qv = &hq[bi * qs as usize + hi * d_..][..d_];
            let base = (bi * h_ + hi) * tm * d_;
            let s: Vec<f64> = (0..t as usize)
                .map(|ti| (0..d_).map(|j| qv[j] * hk[base + ti * d_ + j]).sum::<f64>() * scale as f64)
                .collect();
            let m = s.iter().cloned().fold(f64::MIN, f64::max);
            let p: Vec<f64> = s.iter().map(|x| (x - m).exp()).collect();
            let z: f64 = p.iter().sum();
            want.extend((0..d_).map(|j| (0..t as usize).map(|ti| p[ti] * hv[base + ti * d_ + j]).sum::<f64>() / z));
        }
    }
    let err = rel_err(&got, &want);
    Ok(Check { kernel: name.into(), rel_err: err, tolerance: tol(dtype), ok: err <= tol(dtype) })
}
