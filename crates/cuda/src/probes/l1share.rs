//! `l1share`: which of the SM's read paths share storage (docs/SM_MEMORIES.md; mt4g's "sharedWith"), found by
//! interference in one launch on SM 0 (kernels/constmem.cu `smc_interfere`): a victim chase (16 KiB
//! through ld.global.ca, ld.global.nc or texture fetches; 1 KiB of the constant bank) is timed while
//! resident (one lap, clock64 cycles), an aggressor warp chases a footprint that overfills its own cache (2 MiB at 128 B for
//! the global paths, the other 63 KiB of the bank for the constant one), and the victim is timed
//! again. The aggressor of the victim's own kind is the positive control (what a full eviction
//! costs); a cross-kind aggressor's share of that is `sm_fit::share_fraction`. A run without an
//! aggressor is the negative control. Instances per SM: the same-kind aggressor on warps 1, 2, 3
//! (other sub-partitions, if warps are dealt to sub-partitions by warp index mod 4) and on warp 4
//! (the victim's sub-partition) for the L1 and constant-L1 victims (`sm_fit::instances`).

use super::sm_chase::{order, Bench, Cycle, Path, CONST_BANK_BYTES};
use super::sm_fit::{classify, instances, share_fraction, Share};
use super::{cuda_only, run_gpu};
use crate::CudaTarget;
use memscope_core::keys;
use memscope_core::stats::median;
use memscope_core::{Applicability, Confidence, Finding, Probe, ProbeContext, ProbeError, ProbeOutput, TargetInfo};

pub struct L1ShareProbe;

/// The aggressor's default warp: the victim's sub-partition (warp 0 + 4).
const AGG_WARP: u32 = 4;

fn key_of(p: Path) -> &'static str {
    match p {
        Path::Ca => keys::L1_SHARED_WITH,
        Path::Nc => keys::TEX_NC_SHARED_WITH,
        Path::Tex => keys::TEX_TEXTURE_SHARED_WITH,
        Path::Const => keys::CONST_L1_SHARED_WITH,
    }
}

fn label(p: Path) -> &'static str {
    match p {
        Path::Ca => "L1 (ld.global.ca)",
        Path::Nc => "read-only (ld.global.nc)",
        Path::Tex => "texture",
        Path::Const => "constant",
    }
}

/// Median (before, after) cycles per hop of `reps` interference runs.
fn runs(
    t: &mut CudaTarget,
    b: &Bench,
    v: &Cycle,
    a: Option<&Cycle>,
    warp: u32,
    reps: u32,
) -> Result<(f64, f64), ProbeError> {
    let mut bs = Vec::new();
    let mut afs = Vec::new();
    for _ in 0..reps.max(1) {
        let (x, y) = b.interfere(t, v, a, warp)?;
        bs.push(x);
        afs.push(y);
    }
    Ok((median(&bs), median(&afs)))
}

fn measure(t: &mut CudaTarget, quick: bool) -> Result<ProbeOutput, ProbeError> {
    let reps = if quick { 2 } else { 3 };
    let mut b = Bench::new(t, 8 << 20)?;
    let res = run(t, &mut b, reps);
    b.free(t);
    res
}

fn run(t: &mut CudaTarget, b: &mut Bench, reps: u32) -> Result<ProbeOutput, ProbeError> {
    // Victims: 16 KiB (random order, 32 B apart) for the global paths, 1 KiB of the bank (64 B).
    let g_victim = b.place(t, Path::Ca, 0, 32, &order(512, true, 1))?;
    let nc_victim = Cycle { path: Path::Nc, ..g_victim.clone() };
    let tex_victim = b.place(t, Path::Tex, 64 << 10, 32, &order(512, true, 2))?;
    let c_victim = b.place(t, Path::Const, 0, 64, &order(16, true, 3))?;
    // Aggressors: 2 MiB ascending at 128 B; the other 63 KiB of the bank at 64 B.
    let g_agg = b.place(t, Path::Ca, 2 << 20, 128, &order(16384, false, 0))?;
    let nc_agg = Cycle { path: Path::Nc, ..g_agg.clone() };
    let tex_agg = b.place(t, Path::Tex, 4 << 20, 128, &order(16384, false, 0))?;
    let c_agg = b.place(t, Path::Const, 1024, 64, &order(((CONST_BANK_BYTES - 1024) / 64) as usize, false, 0))?;
    let victim = |p: Path| match p {
        Path::Ca => &g_victim,
        Path::Nc => &nc_victim,
        Path::Tex => &tex_victim,
        Path::Const => &c_victim,
    };
    let aggressor = |p: Path| match p {
        Path::Ca => &g_agg,
        Path::Nc => &nc_agg,
        Path::Tex => &tex_agg,
        Path::Const => &c_agg,
    };
    let mut out = ProbeOutput::default();
    let method = format!(
        "interference in one launch on SM 0: the victim chase timed while resident, an aggressor warp ({AGG_WARP}) fills its own cache, \
         the victim timed again; the share of the eviction caused by the victim's own kind; median of {reps} runs each"
    );
    let mut self_runs = Vec::new();
    for v in Path::ALL {
        let (b0, a0) = runs(t, b, victim(v), None, AGG_WARP, reps)?;
        let (bs, as_) = runs(t, b, victim(v), Some(aggressor(v)), AGG_WARP, reps)?;
        self_runs.push((v, bs, as_));
        let mut shared = Vec::new();
        let mut row = vec![format!(
            "cycles per hop over one lap: resident {b0:.1}, {a0:.1} after no aggressor, {as_:.1} after its own kind (the full eviction)"
        )];
        let mut undecided = false;
        for a in Path::ALL.into_iter().filter(|&a| a != v) {
            let (ba, aa) = runs(t, b, victim(v), Some(aggressor(a)), AGG_WARP, reps)?;
            match share_fraction(ba, aa, bs, as_) {
                Some(f) => {
                    row.push(format!("{}: {:.0}% ({aa:.1} after)", label(a), 100.0 * f));
                    match classify(f) {
                        Share::Yes => shared.push(label(a).to_string()),
                        Share::Partial => shared.push(format!("{} (partial)", label(a))),
                        Share::No => {}
                    }
                }
                None => undecided = true,
            }
        }
        // The negative control: without an aggressor the victim must stay resident.
        let drift = share_fraction(b0, a0, bs, as_).unwrap_or(0.0);
        let f = if undecided {
            Finding::undetermined(
                "",
                &method,
                &format!(
                    "the victim's own kind did not evict it ({bs:.1} -> {as_:.1} cycles/hop): no scale to judge the others by"
                ),
            )
        } else {
            let conf = if drift.abs() < 0.15 { Confidence::High } else { Confidence::Low };
            let mut note = format!("victim {}; {}", label(v), row.join("; "));
            if drift.abs() >= 0.15 {
                note += &format!("; the control without an aggressor moved by {:.0}% of the eviction", 100.0 * drift);
            }
            Finding::json(serde_json::json!(shared), "", &method, conf).with_note(&note)
        };
        out.finding(key_of(v), f);
    }

    // Instances per SM (L1 and the constant L1): the same kind from warps 1, 2, 3 against warp 4.
    for (v, key) in [(Path::Ca, keys::L1_INSTANCES_PER_SM), (Path::Const, keys::CONST_L1_INSTANCES_PER_SM)] {
        let (_, bs, as_) = *self_runs.iter().find(|r| r.0 == v).expect("every victim ran");
        let same = share_fraction(bs, as_, bs, as_);
        let mut others = Vec::new();
        for w in 1..4 {
            let (bw, aw) = runs(t, b, victim(v), Some(aggressor(v)), w, reps)?;
            others.push(share_fraction(bw, aw, bs, as_));
        }
        let imethod = format!(
            "the {} aggressor on warps 1, 2, 3 (other sub-partitions when warps are dealt by index mod 4) against warp 4 (the victim's): \
             one instance when all evict the victim, one per sub-partition when only warp 4 does; median of {reps} runs",
            label(v)
        );
        let f = match (same, others.iter().copied().collect::<Option<Vec<f64>>>()) {
            (Some(s), Some(o)) => match instances(s, &o) {
                Some(n) => Finding::integer(n as u64, "count", &imethod, Confidence::Medium).with_note(&format!(
                    "evicted share by warp 1, 2, 3: {:.0}%, {:.0}%, {:.0}%",
                    100.0 * o[0],
                    100.0 * o[1],
                    100.0 * o[2]
                )),
                None => Finding::undetermined(
                    "count",
                    &imethod,
                    &format!("mixed evictions from the other warps ({o:.2?}): neither one shared instance nor one per sub-partition"),
                ),
            },
            _ => Finding::undetermined("count", &imethod, "the same-kind aggressor did not evict the victim"),
        };
        out.finding(key, f);
    }
    Ok(out)
}

impl Probe for L1ShareProbe {
    fn key(&self) -> &'static str {
        "l1share"
    }
    fn description(&self) -> &'static str {
        "which read paths (L1, read-only, texture, constant) share storage, by interference; L1 and constant-L1 instances per SM"
    }
    fn applicability(&self, info: &TargetInfo) -> Applicability {
        match cuda_only(info) {
            Applicability::Applicable => Applicability::Applicable,
            Applicability::Waived(_) => Applicability::Waived(
                "needs a real CUDA GPU: the simulator has no constant, read-only or texture path to interfere with"
                    .into(),
            ),
        }
    }
    fn run(&self, ctx: &mut ProbeContext<'_>) -> Result<ProbeOutput, ProbeError> {
        run_gpu(ctx, measure)
    }
}
