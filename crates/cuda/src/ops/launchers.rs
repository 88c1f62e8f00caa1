//! Launchers of the bottleneck model's row and attention kernels (seed 003; kernels/ops/rows.cu
//! and attention.cu): the row-kernel variant chosen per operation, its register tile, the grid,
//! and decode attention's shared memory. Used by the 58-operation evaluation, the checks, the
//! batched decode step and the composition sweep.

use super::device::{Arg, OpsGpu};
use crate::gpu::{GpuError, GpuResult};
use memscope_model::bottleneck::Dtype;

/// Which row kernels `kind` ("layernorm" or "softmax") uses: v1 (generic: one warp per row), v2
/// (several rows per warp), v3 (persistent warps prefetching their next row), v4 (v3 with an L2
/// prefetch 3 rows ahead, L1-bypassing loads, streaming and packed fp16 stores), v5 (v4 without the
/// register prefetch, 4 rows ahead, fewer registers) or, for layer norm only, v6 (v1's one warp per
/// row with gamma and beta staged per block in shared memory by loads issued with the row's).
/// Defaults: v6 for layer norm, v1 for softmax (the best of each on the H200 at every measured size,
/// docs/MODEL.md "Attempts"). `MEMSCOPE_ROWS_LAYERNORM` / `MEMSCOPE_ROWS_SOFTMAX` choose per
/// operation and override `MEMSCOPE_ROWS`, which chooses for both (v6 asked for softmax gives v1).
/// v2-v6 exist for the harness's shapes only; other shapes use v1.
pub fn rows_variant(kind: &str) -> &'static str {
    let per_op = std::env::var(format!("MEMSCOPE_ROWS_{}", kind.to_uppercase())).ok();
    match per_op.or_else(|| std::env::var("MEMSCOPE_ROWS").ok()).as_deref() {
        Some("v1") => "v1",
        Some("v2") => "v2",
        Some("v3") => "v3",
        Some("v4") => "v4",
        Some("v5") => "v5",
        _ if kind == "layernorm" => "v6",
        _ => "v1",
    }
}

/// The instantiated register tile of a shape: (vectors per lane, v2's rows per warp).
fn rows_tile(dtype: Dtype, cols: u64) -> Option<(u64, u64)> {
    match (dtype, cols) {
        (Dtype::Fp32, 768) => Some((6, 2)),
        (Dtype::Fp32, 1024) => Some((8, 2)),
        (Dtype::Fp16, 768) => Some((3, 4)),
        (Dtype::Fp16, 1024) => Some((4, 4)),
        _ => None,
    }
}

/// Launch layer norm (`params` = gamma, beta) or softmax over rows x cols with the variant of
/// `rows_variant` (kernels/ops/rows.cu). v3's and v4's grid is the rows' warps, capped at what fits on the
/// GPU at once (occupancy API). A staged variant (rows copied to shared memory with cp.async) was
/// measured slower on the H200 and removed (docs/MODEL.md).
#[allow(clippy::too_many_arguments)]
pub fn launch_rows(
    g: &OpsGpu,
    kind: &str,
    dtype: Dtype,
    x: u64,
    y: u64,
    params: Option<(u64, u64)>,
    rows: u64,
    cols: u64,
) -> GpuResult<()> {
    let variant = rows_variant(kind);
    if let (Some((cv, rpw)), true) = (rows_tile(dtype, cols), variant != "v1") {
        let sfx = if dtype == Dtype::Fp32 { "f32" } else { "f16" };
        let mut args = vec![Arg::Ptr(x), Arg::Ptr(y)];
        if let Some((gamma, beta)) = params {
            args.extend([Arg::Ptr(gamma), Arg::Ptr(beta)]);
        }
        args.push(Arg::I32(rows as i32));
        if params.is_some() {
            args.push(Arg::F32(1e-5));
        }
        if variant == "v6" {
            return g.launch(&format!("{kind}_v6_{sfx}_c{cv}"), rows.div_ceil(8) as u32, 256, 0, &args);
        }
        if variant == "v2" {
            let name = format!("{kind}_v2_{sfx}_c{cv}_r{rpw}");
            return g.launch(&name, rows.div_ceil(8 * rpw) as u32, 256, 0, &args);
        }
        let name = format!("{kind}_{variant}_{sfx}_c{cv}");
        let cap = (g.sm_count * g.resident_blocks(&name)) as u64;
        if variant == "v3" {
            return g.launch(&name, rows.div_ceil(8).min(cap) as u32, 256, 0, &args);
        }
        // v4, v5: as many warps as give every warp the same number of rows, within what fits.
        let per_warp = rows.div_ceil(8 * cap);
        return g.launch(&name, rows.div_ceil(per_warp).div_ceil(8) as u32, 256, 0, &args);
    }
    let sfx = if dtype == Dtype::Fp32 { "f32" } else { "f16" };
    let vec = 16 / dtype.size_bytes() as u64;
    if !cols.is_multiple_of(vec) || rows == 0 {
        return Err(GpuError::invalid(format!(
            "{kind}: {rows} x {cols} ({}): columns must be a positive multiple of {vec}",
            dtype.name()
        )));
    }
    let mut args = vec![Arg::Ptr(x), Arg::Ptr(y)];
    if let Some((gamma, beta)) = params {
        args.extend([Arg::Ptr(gamma), Arg::Ptr(beta)]);
    }
    args.extend([Arg::I32(rows as i32), Arg::I32(cols as i32)]);
    if params.is_some() {
        args.push(Arg::F32(1e-5));
    }
    g.launch(&format!("{kind}_{sfx}"), rows.div_ceil(8) as u32, 256, 0, &args)
}

/// Launch decode attention (head dim 64, fp32 or fp16) over `tokens` of a cache with room for `t_max`.
#[allow(clippy::too_many_arguments)]
pub fn attention(
    g: &OpsGpu,
    dtype: Dtype,
    q: u64,
    q_stride: i32,
    k: u64,
    v: u64,
    out: u64,
    batch: u64,
    heads: u64,
    tokens: u64,
    t_max: u64,
) -> GpuResult<()> {
    let smem = (tokens.next_multiple_of(4) * 4 + 8 * 16 * 16) as u32;
    let args = [
        Arg::Ptr(q),
        Arg::I32(q_stride),
        Arg::Ptr(k),
        Arg::Ptr(v),
        Arg::Ptr(out),
        Arg::I32(heads as i32),
        Arg::I32(tokens as i32),
        Arg::I32(t_max as i32),
        Arg::F32(0.125),
    ];
    let name = if dtype == Dtype::Fp32 { "decode_attention_f32" } else { "decode_attention_f16" };
    g.launch(name, (batch * heads) as u32, 128, smem, &args)
}
