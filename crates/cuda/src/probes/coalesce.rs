//! `coalesce`: sectors per request versus stride (seed 000 footnote 1), by timing: every warp of a
//! full grid loads 4 bytes per lane at a stride of s words past L1 (ld.global.cg) over 16 MiB of
//! L2-resident lines. When L2 sector throughput limits, time per request grows with the sectors a
//! request touches, so sectors(s) ~= 4 x t(s) / t(1), taking stride 1 (128 contiguous bytes) as
//! 4 sectors. ncu's l1tex__average_t_sectors_per_request counter is not read here (method says so).

use super::bw::timed;
use super::{cuda_only, run_gpu};
use crate::gpu::Module;
use crate::CudaTarget;
use memscope_core::keys;
use memscope_core::stats::median;
use memscope_core::{
    Applicability, Confidence, Finding, Probe, ProbeContext, ProbeError, ProbeOutput, Series, TargetInfo,
};

pub struct CoalesceProbe;

const STRIDES: [u64; 7] = [1, 2, 4, 8, 16, 32, 64];

fn measure(t: &mut CudaTarget, quick: bool) -> Result<ProbeOutput, ProbeError> {
    let reps = if quick { 3 } else { 7 };
    let span: u64 = 16 << 20;
    let buf = t.gpu.malloc(span)?;
    let sink = t.scratch(64)?;
    let res = (|| -> Result<ProbeOutput, ProbeError> {
        super::bw::fill(t, buf, span / 4, 0xffff_ffff, 0, 3)?;
        let grid = t.sms * 8;
        let iters = 1024u64;
        let null = std::ptr::null_mut();
        let mut times = Vec::new();
        for &s in &STRIDES {
            let args = [buf, s, span, iters, sink];
            t.gpu.launch(Module::Store, "coalesce_load", grid, 256, 0, &args, null)?;
            let mut v = Vec::new();
            for _ in 0..reps {
                v.push(timed(t, null, 1, |tt| {
                    tt.gpu.launch(Module::Store, "coalesce_load", grid, 256, 0, &args, null)
                })?);
            }
            times.push(median(&v));
        }
        let est: Vec<f64> = times.iter().map(|x| 4.0 * x / times[0]).collect();
        let mut out = ProbeOutput::default();
        let method = format!(
            "timing, not ncu counters: {} blocks x 256 threads, 4-byte ld.global.cg per lane at stride s words over 16 MiB \
             L2-resident, {iters} requests per warp, events, median of {reps}; sectors = 4 x t(s)/t(1)",
            grid
        );
        let list: Vec<serde_json::Value> = STRIDES
            .iter()
            .zip(&est)
            .map(|(s, e)| serde_json::json!({"stride_bytes": s * 4, "sectors": (e * 10.0).round() / 10.0}))
            .collect();
        out.finding(
            keys::COALESCE_SECTORS_PER_REQUEST,
            Finding::json(serde_json::Value::Array(list), "sectors", &method, Confidence::Low).with_note(
                "expected from seed 000 footnote 1: the number of distinct 32-byte spans the 32 lanes touch (4, 8, 16, 32, 32, ...); \
                 timing saturates when another limit (request issue) dominates",
            ),
        );
        out.series(
            "coalesce.sectors_per_request",
            Series {
                description: "estimated sectors per warp request versus lane stride (timing)".into(),
                x_name: "stride".into(),
                x_unit: "bytes".into(),
                y_name: "sectors".into(),
                y_unit: "sectors".into(),
                x: STRIDES.iter().map(|s| (s * 4) as f64).collect(),
                y: est,
                y_spread: None,
                marks: vec![],
            },
        );
        Ok(out)
    })();
    t.gpu.free(buf);
    res
}

impl Probe for CoalesceProbe {
    fn key(&self) -> &'static str {
        "coalesce"
    }
    fn description(&self) -> &'static str {
        "GPU sectors per warp request versus lane stride (timing; ncu counters when run from scripts)"
    }
    fn applicability(&self, target: &TargetInfo) -> Applicability {
        cuda_only(target)
    }
    fn run(&self, ctx: &mut ProbeContext<'_>) -> Result<ProbeOutput, ProbeError> {
        run_gpu(ctx, measure)
    }
}
