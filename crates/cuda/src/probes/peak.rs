//! `peak`: matrix throughput through cuBLAS (seed 003's FLOP ceiling): fp32 (cublasSgemm, default
//! math mode: no TF32), fp16 and bf16 (cublasGemmEx, fp32 accumulation), 8192^3 on random data in
//! +-[1, 2) (never zeros: seed 003 / METHOD.md). Each sample is one product between events after
//! warm-ups; median. A sustained product can hit the power cap and drop the SM clock: the NVML
//! readings around the probe turn that into a warning.

use super::bw::{fill, timed};
use super::{cuda_only, run_gpu, summarize};
use crate::gpu::{Blas, LEGACY_STREAM};
use crate::CudaTarget;
use memscope_core::keys;
use memscope_core::{Applicability, Confidence, Finding, Probe, ProbeContext, ProbeError, ProbeOutput, TargetInfo};
use memscope_model::bottleneck::Dtype;

pub struct PeakProbe;

fn measure(t: &mut CudaTarget, quick: bool) -> Result<ProbeOutput, ProbeError> {
    // (the layer's wrapper: row-major products; on square matrices the same product shapes)
    let blas = Blas::new(LEGACY_STREAM).map_err(|e| ProbeError::Failed(e.to_string()))?;
    let n: i32 = if quick { 4096 } else { 8192 };
    let reps = if quick { 3 } else { 10 };
    let bytes = (n as u64) * (n as u64) * 4;
    let bufs = [t.gpu.malloc(bytes)?, t.gpu.malloc(bytes)?, t.gpu.malloc(bytes)?];
    let n64 = n as u64;
    let gemm = |p: Dtype, a: u64, b: u64, c: u64| blas.gemm(p, n64, n64, n64, a, b, c);
    let res = (|| -> Result<ProbeOutput, ProbeError> {
        let mut out = ProbeOutput::default();
        let flops = 2.0 * (n as f64).powi(3);
        for (p, key, mask, bits, desc) in [
            (Dtype::Fp32, "fp32", 0x807f_ffffu32, 0x3f80_0000u32, "cublasSgemm (fp32, default math mode, no TF32)"),
            (Dtype::Fp16, "fp16", 0x83ff_83ff, 0x3c00_3c00, "cublasGemmEx fp16 in/out, fp32 compute"),
            (Dtype::Bf16, "bf16", 0x807f_807f, 0x3f80_3f80, "cublasGemmEx bf16 in/out, fp32 compute"),
        ] {
            fill(t, bufs[0], bytes / 4, mask, bits, 11)?;
            fill(t, bufs[1], bytes / 4, mask, bits, 12)?;
            for _ in 0..3 {
                gemm(p, bufs[0], bufs[1], bufs[2])?;
            }
            t.gpu.sync()?;
            let mut rates = Vec::new();
            for _ in 0..reps {
                let ms = timed(t, std::ptr::null_mut(), 1, |_| gemm(p, bufs[0], bufs[1], bufs[2]))?;
                rates.push(flops / (ms / 1e3));
            }
            // The clock while products run: enqueue a few more, read NVML mid-way, then wait.
            for _ in 0..6 {
                gemm(p, bufs[0], bufs[1], bufs[2])?;
            }
            std::thread::sleep(std::time::Duration::from_millis(if quick { 2 } else { 10 }));
            let during = crate::gpu::nvml::read(t.gpu.ordinal, t.gpu.pci_bus_id().as_deref());
            t.gpu.sync()?;
            let clock_note = match during {
                Some(r) => format!(
                    "during the products (NVML): SM clock {} MHz, power {} W of {} W, throttle reasons [{}]",
                    r.sm_clock_mhz.map_or("?".into(), |v| v.to_string()),
                    r.power_w.map_or("?".into(), |v| format!("{v:.0}")),
                    r.power_limit_w.map_or("?".into(), |v| format!("{v:.0}")),
                    r.throttle.join(", ")
                ),
                None => "NVML unavailable: clock during the products not recorded".into(),
            };
            let (m, s) = summarize(&rates, "matrix throughput")?;
            out.finding(
                &keys::peak_flops_per_s(key),
                Finding::number(
                    m,
                    "flops/s",
                    &format!("{desc}, {n}x{n}x{n} on random data in +-[1,2), 3 warm-ups, events per product, median of {reps}"),
                    Confidence::High,
                )
                .with_spread(s)
                .with_note(&format!("clocks are not locked (a sustained product can hit the power cap and lower the SM clock); {clock_note}")),
            );
        }
        Ok(out)
    })();
    drop(blas);
    for b in bufs {
        t.gpu.free(b);
    }
    res
}

impl Probe for PeakProbe {
    fn key(&self) -> &'static str {
        "peak"
    }
    fn description(&self) -> &'static str {
        "GPU fp32, fp16 and bf16 matrix throughput through cuBLAS on random data"
    }
    fn applicability(&self, target: &TargetInfo) -> Applicability {
        cuda_only(target)
    }
    fn run(&self, ctx: &mut ProbeContext<'_>) -> Result<ProbeOutput, ProbeError> {
        run_gpu(ctx, measure)
    }
}
