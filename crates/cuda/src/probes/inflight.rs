//! `inflight`: DRAM and L2 read bandwidth against the bytes in flight per SM (docs/SM_MEMORIES.md; Little's
//! law: bandwidth = bytes in flight / latency), kernels par_read_u* in kernels/levels.cu. Each
//! point is a launch shape (warps per SM: one block per SM of 1-32 warps, or two of 32) and loads in
//! flight per thread (U = 1, 2, 4 independent 16-byte ld.global.cg): the bytes in flight per SM
//! the code allows are warps x 32 x 16 x U. DRAM: a 1 GiB buffer (16x the L2) read once a launch;
//! L2: a 16 MiB footprint read pass after pass, >= 512 MiB a launch. `analyze` finds the plateau (the
//! fastest point) and the bytes in flight where the curve first reaches 90 % of it (between ladder
//! points the rate taken as proportional to the bytes in flight); Little's law with the idle latency of the `latency` probe
//! (dram.latency_ns, l2.hit_latency_ns) predicts 0.9 x plateau x latency / SMs, and the ratio of the
//! two says how much the latency grows under load.

use super::bw::timed;
use super::{cuda_only_sim_lacks, run_gpu, summarize};
use crate::gpu::Module;
use crate::CudaTarget;
use memscope_core::keys;
use memscope_core::{
    Applicability, Confidence, Finding, Probe, ProbeContext, ProbeError, ProbeOutput, Series, TargetInfo,
};
use std::collections::BTreeMap;

pub struct InflightProbe;

/// The points: (warps per SM, loads in flight per thread).
const LADDER: [(u32, u32); 9] = [(1, 1), (1, 2), (1, 4), (2, 4), (4, 4), (8, 4), (16, 4), (32, 4), (64, 4)];

/// Bytes in flight per SM a point allows.
pub fn inflight_bytes(warps: u32, u: u32) -> u64 {
    warps as u64 * 32 * 16 * u as u64
}

/// What a bandwidth-by-parallelism curve says.
#[derive(Debug, Clone, PartialEq)]
pub struct Saturation {
    /// The fastest rate, bytes/s.
    pub plateau_bytes_per_s: f64,
    /// Bytes in flight per SM where the curve first reaches 90 % of the plateau.
    pub inflight_90_bytes: f64,
}

/// Plateau and 90 % point of (bytes in flight, bytes/s) sorted by bytes in flight. Between the last
/// point below 90 % and the first at or above it, the rate is taken as proportional to the bytes in
/// flight (Little's law at the lower point's latency), capped at the upper point: the crossing is
/// min(x_hi, x_lo x goal / y_lo): exact for a curve that is latency-bound up to a sharp knee, on the
/// low side where the curve bends before its plateau. A first point already at 90 % gives that point. None for fewer
/// than 2 points, unsorted or non-positive input.
pub fn analyze(x: &[f64], y: &[f64]) -> Option<Saturation> {
    if x.len() < 2
        || x.len() != y.len()
        || x.windows(2).any(|w| w[1] <= w[0])
        || x.iter().chain(y).any(|v| !(*v > 0.0 && v.is_finite()))
    {
        return None;
    }
    let top = y.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let goal = 0.9 * top;
    let i = y.iter().position(|&v| v >= goal)?;
    let at = if i == 0 { x[0] } else { (x[i - 1] * goal / y[i - 1]).min(x[i]) };
    Some(Saturation { plateau_bytes_per_s: top, inflight_90_bytes: at })
}

/// Little's law: the bytes per SM that must be in flight to move `rate` bytes/s at `latency_ns`.
pub fn littles_law_bytes(rate: f64, latency_ns: f64, sms: u32) -> f64 {
    rate * latency_ns * 1e-9 / sms.max(1) as f64
}

/// Median rate and MAD at each point of the ladder, and the fewest distinct SMs any launch used.
fn sweep(
    t: &mut CudaTarget,
    buf: u64,
    bytes: u64,
    passes: u64,
    reps: usize,
) -> Result<(Vec<(f64, f64)>, usize), ProbeError> {
    let null = std::ptr::null_mut();
    let sink = t.scratch(64 << 10)?;
    let seen = sink + 4096;
    let mut out = Vec::new();
    let mut fewest = usize::MAX;
    for &(w, u) in &LADDER {
        let (grid, block) = if w <= 32 { (t.sms, 32 * w) } else { (t.sms * (w / 32), 1024) };
        let name = match u {
            1 => "par_read_u1",
            2 => "par_read_u2",
            _ => "par_read_u4",
        };
        let args = [buf, bytes, passes, seen, sink];
        t.gpu.launch(Module::Levels, name, grid, block, 0, &args, null)?;
        let mut v = Vec::new();
        for _ in 0..reps {
            let ms = timed(t, null, 1, |tt| tt.gpu.launch(Module::Levels, name, grid, block, 0, &args, null))?;
            v.push((bytes * passes) as f64 / (ms * 1e-3));
        }
        let sms: Vec<u32> = t.gpu.dtoh(seen, grid as usize)?;
        let distinct: std::collections::BTreeSet<u32> = sms.into_iter().collect();
        fewest = fewest.min(distinct.len());
        let (m, s) = summarize(&v, "read rate")?;
        out.push((m, s.mad));
    }
    Ok((out, fewest))
}

/// The findings of one level: the 90 % point with Little's law beside it.
#[allow(clippy::too_many_arguments)]
fn level_findings(
    out: &mut ProbeOutput,
    level: &str,
    key: &str,
    latency_key: &str,
    earlier: &BTreeMap<String, Finding>,
    sms: u32,
    xs: &[f64],
    pts: &[(f64, f64)],
    method: &str,
    fewest: usize,
) {
    let ys: Vec<f64> = pts.iter().map(|p| p.0).collect();
    let f = match analyze(xs, &ys) {
        Some(s) => {
            let mut note = format!("plateau {:.3} TB/s", s.plateau_bytes_per_s / 1e12);
            match earlier.get(latency_key).and_then(Finding::as_f64) {
                Some(lat) => {
                    let ll = littles_law_bytes(0.9 * s.plateau_bytes_per_s, lat, sms);
                    note.push_str(&format!(
                        "; Little's law with the idle latency {latency_key} = {lat:.1} ns: {:.0} B per SM for 90% of it; measured {:.2}x that \
                         (the latency under load over the idle latency, or the issue gaps the code leaves)",
                        ll,
                        s.inflight_90_bytes / ll
                    ));
                }
                None => {
                    note.push_str(&format!("; {latency_key} not measured in this session: no Little's law comparison"))
                }
            }
            if fewest < sms as usize {
                note.push_str(&format!("; a launch used only {fewest} of {sms} SMs"));
            }
            let top_is_last = ys.last().is_some_and(|&l| l >= 0.999 * s.plateau_bytes_per_s);
            let conf = if top_is_last { Confidence::Medium } else { Confidence::High };
            if top_is_last {
                note.push_str("; the largest point is the fastest: the plateau may lie beyond the sweep");
            }
            Finding::number(s.inflight_90_bytes, "bytes", method, conf).with_note(&note)
        }
        None => Finding::undetermined(
            "bytes",
            method,
            &format!("the {level} read rates do not form a curve (non-positive rates)"),
        ),
    };
    out.finding(key, f);
    out.series(
        &format!("inflight.{level}_read"),
        Series {
            description: format!("{level} read bandwidth of all SMs against the bytes in flight per SM (warps x 32 x 16 B x loads per thread)"),
            x_name: "bytes in flight per SM".into(),
            x_unit: "bytes".into(),
            y_name: "read bandwidth".into(),
            y_unit: "bytes/s".into(),
            x: xs.to_vec(),
            y: ys,
            y_spread: Some(pts.iter().map(|p| p.1).collect()),
            marks: vec![],
        },
    );
}

fn measure(t: &mut CudaTarget, quick: bool, earlier: &BTreeMap<String, Finding>) -> Result<ProbeOutput, ProbeError> {
    let reps = if quick { 2 } else { 3 };
    let dram_bytes: u64 = if quick { 512 << 20 } else { 1 << 30 };
    let l2_bytes: u64 = 16 << 20;
    let per_launch: u64 = if quick { 256 << 20 } else { 512 << 20 };
    let buf = t.gpu.malloc(dram_bytes)?;
    let sms = t.sms;
    let xs: Vec<f64> = LADDER.iter().map(|&(w, u)| inflight_bytes(w, u) as f64).collect();
    let ladder = LADDER.iter().map(|(w, u)| format!("{w}x{u}")).collect::<Vec<_>>().join(", ");
    let mut out = ProbeOutput::default();
    let res = (|| -> Result<(), ProbeError> {
        super::bw::fill(t, buf, dram_bytes / 4, 0xffff_ffff, 0, 31)?;
        let (dram, fd) = sweep(t, buf, dram_bytes, 1, reps)?;
        let method = format!(
            "{} MiB read once a launch (ld.global.cg.v4, grid-stride), warps per SM x loads in flight per thread: {ladder}; events, median of {reps}",
            dram_bytes >> 20
        );
        level_findings(
            &mut out,
            "dram",
            keys::DRAM_INFLIGHT_90PCT_PER_SM_BYTES,
            keys::DRAM_LATENCY_NS,
            earlier,
            sms,
            &xs,
            &dram,
            &method,
            fd,
        );
        let passes = per_launch / l2_bytes;
        let (l2, fl) = sweep(t, buf, l2_bytes, passes, reps)?;
        let method = format!(
            "a {} MiB footprint read {passes} times a launch (ld.global.cg.v4, grid-stride), warps per SM x loads \
             in flight per thread: {ladder}; events, median of {reps}",
            l2_bytes >> 20
        );
        level_findings(
            &mut out,
            "l2",
            keys::L2_INFLIGHT_90PCT_PER_SM_BYTES,
            keys::L2_HIT_LATENCY_NS,
            earlier,
            sms,
            &xs,
            &l2,
            &method,
            fl,
        );
        Ok(())
    })();
    t.gpu.free(buf);
    res.map(|_| out)
}

impl Probe for InflightProbe {
    fn key(&self) -> &'static str {
        "inflight"
    }
    fn description(&self) -> &'static str {
        "DRAM and L2 read bandwidth against bytes in flight per SM; the 90% point beside Little's law"
    }
    fn applicability(&self, info: &TargetInfo) -> Applicability {
        cuda_only_sim_lacks(
            info,
            "the simulated target runs pointer chases only, not the bandwidth kernels this probe times",
        )
    }
    fn needs(&self) -> &'static [&'static str] {
        &["latency"]
    }
    fn run(&self, ctx: &mut ProbeContext<'_>) -> Result<ProbeOutput, ProbeError> {
        let earlier = ctx.earlier.clone();
        run_gpu(ctx, |t, quick| measure(t, quick, &earlier))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A latency-bound curve: rate = min(peak, sms x bytes / latency).
    fn little_curve(peak: f64, latency_ns: f64, sms: u32) -> (Vec<f64>, Vec<f64>) {
        let x: Vec<f64> = LADDER.iter().map(|&(w, u)| inflight_bytes(w, u) as f64).collect();
        let y = x.iter().map(|b| (sms as f64 * b / (latency_ns * 1e-9)).min(peak)).collect();
        (x, y)
    }

    #[test]
    fn the_90_percent_point_of_a_littles_law_curve_is_littles_law() {
        let (x, y) = little_curve(4.5e12, 600.0, 132);
        let s = analyze(&x, &y).unwrap();
        assert_eq!(s.plateau_bytes_per_s, 4.5e12);
        let want = littles_law_bytes(0.9 * 4.5e12, 600.0, 132);
        assert!((s.inflight_90_bytes - want).abs() < 1e-6 * want, "{} vs {want}", s.inflight_90_bytes);
        // A curve that bends before the plateau (latency growing with load; 90 % of its fastest
        // point is reached at 64 KiB): the estimate lies between the two ladder points around the
        // crossing, on the low side of it.
        let y2: Vec<f64> = x.iter().map(|b| 4.5e12 * (b / 16384.0) / (1.0 + b / 16384.0)).collect();
        let s = analyze(&x, &y2).unwrap();
        assert!(s.inflight_90_bytes > 32768.0 && s.inflight_90_bytes <= 65536.0, "{s:?}");
    }

    #[test]
    fn noisy_curves_and_edge_cases() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        for _ in 0..30 {
            let (x, y) = little_curve(9e12, 250.0, 132);
            let y: Vec<f64> = y.iter().map(|v| v * (1.0 + 0.03 * (rng.gen::<f64>() * 2.0 - 1.0))).collect();
            let s = analyze(&x, &y).unwrap();
            let want = littles_law_bytes(0.9 * 9e12, 250.0, 132);
            assert!(
                s.inflight_90_bytes > 0.7 * want && s.inflight_90_bytes < 1.4 * want,
                "{} vs {want}",
                s.inflight_90_bytes
            );
        }
        // Already saturated at the first point.
        let s = analyze(&[512.0, 1024.0], &[1e12, 1e12]).unwrap();
        assert_eq!(s.inflight_90_bytes, 512.0);
        assert!(analyze(&[1.0], &[1.0]).is_none());
        assert!(analyze(&[2.0, 1.0], &[1.0, 2.0]).is_none());
        assert!(analyze(&[1.0, 2.0], &[0.0, 2.0]).is_none());
    }

    #[test]
    fn the_ladder_doubles_and_fits_an_sm() {
        let x: Vec<u64> = LADDER.iter().map(|&(w, u)| inflight_bytes(w, u)).collect();
        assert!(x.windows(2).all(|w| w[1] == 2 * w[0]), "{x:?}");
        assert!(LADDER.iter().all(|&(w, u)| w <= 64 && (w <= 32 || w % 32 == 0) && [1, 2, 4].contains(&u)));
    }
}
