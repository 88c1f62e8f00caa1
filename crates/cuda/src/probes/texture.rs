//! `texture`: the read-only and texture paths (docs/SM_MEMORIES.md; mt4g's "readOnly" and "texture"):
//! dependent chases of ld.global.nc loads and of tex.1d fetches from a texture object over a
//! linear buffer on SM 0 (kernels/constmem.cu), with ld.global.ca (L1) in the same instrument for
//! comparison. Per path: the fetch unit from an ascending walk over 1 MiB (past any L1) at strides
//! up to 512 B, then latency versus footprint (8 KiB .. 2 MiB, random cyclic order over cells one
//! fetch unit apart): the first plateau is the hit, the knee the capacity, the second plateau the
//! L2 as that path reaches it; the miss penalty is their difference. Whether the texture path's
//! capacity is L1's is read from the knees (within one sweep step) and, directly, by the `l1share`
//! probe's interference runs.

use super::constmem::{level_finding, penalty_finding, series};
use super::sm_chase::{self, Bench, Path, Point};
use super::sm_fit::{fetch_unit, two_levels};
use super::{cuda_only, run_gpu};
use crate::CudaTarget;
use memscope_core::keys;
use memscope_core::{Applicability, Confidence, Finding, Probe, ProbeContext, ProbeError, ProbeOutput, TargetInfo};

pub struct TextureProbe;

const STRIDE_FOOTPRINT: u64 = 1 << 20;
const FOOTPRINTS_KIB: [u64; 20] =
    [8, 16, 32, 64, 96, 128, 160, 192, 208, 224, 240, 256, 272, 288, 320, 384, 512, 768, 1024, 2048];

/// The keys of one path: hit, capacity, fetch unit, miss penalty (None: not reported).
struct PathKeys {
    path: Path,
    hit: &'static str,
    capacity: &'static str,
    fetch: Option<&'static str>,
    penalty: Option<&'static str>,
    slug: &'static str,
}

const PATHS: [PathKeys; 3] = [
    PathKeys {
        path: Path::Nc,
        hit: keys::TEX_NC_HIT_LATENCY_NS,
        capacity: keys::TEX_NC_CAPACITY_BYTES,
        fetch: Some(keys::TEX_NC_FETCH_BYTES),
        penalty: Some(keys::TEX_NC_MISS_PENALTY_NS),
        slug: "nc",
    },
    PathKeys {
        path: Path::Tex,
        hit: keys::TEX_TEXTURE_HIT_LATENCY_NS,
        capacity: keys::TEX_TEXTURE_CAPACITY_BYTES,
        fetch: Some(keys::TEX_TEXTURE_FETCH_BYTES),
        penalty: Some(keys::TEX_TEXTURE_MISS_PENALTY_NS),
        slug: "texture",
    },
    PathKeys {
        path: Path::Ca,
        hit: keys::TEX_L1_CA_HIT_LATENCY_NS,
        capacity: keys::TEX_L1_CA_CAPACITY_BYTES,
        fetch: None,
        penalty: None,
        slug: "l1_ca",
    },
];

fn strides(path: Path) -> Vec<u64> {
    let first = path.cell_bytes();
    std::iter::successors(Some(first), |s| Some(s * 2)).take_while(|&s| s <= 512).collect()
}

fn measure(t: &mut CudaTarget, quick: bool, l1_earlier: Option<f64>) -> Result<ProbeOutput, ProbeError> {
    let reps = if quick { 3 } else { 5 };
    let clock = t.clock_hz();
    let mut b = Bench::new(t, 4 << 20)?;
    let res = run(t, &mut b, reps, clock);
    b.free(t);
    let mut out = res?;
    // The same level by the latency probe's chase (when it ran before): the two instruments agree.
    // (the finding is taken out only when there is a check to attach: without the latency
    // probe's figure it stays as measured)
    if let Some((v, f)) = l1_earlier.and_then(|v| out.findings.remove(keys::TEX_L1_CA_HIT_LATENCY_NS).map(|f| (v, f))) {
        out.finding(
            keys::TEX_L1_CA_HIT_LATENCY_NS,
            f.with_check(
                v,
                "l1.hit_latency_ns of the latency probe (crates/gpu/kernels/chase.cu)",
                memscope_core::CHECK_TOLERANCE,
            ),
        );
    }
    Ok(out)
}

fn run(t: &mut CudaTarget, b: &mut Bench, reps: u32, clock: Option<f64>) -> Result<ProbeOutput, ProbeError> {
    let mut out = ProbeOutput::default();
    let mut caps: Vec<(Path, f64, f64)> = Vec::new(); // (path, capacity, sweep step at the knee)
    for pk in &PATHS {
        let path = pk.path;
        let instrument = format!(
            "dependent {} loads, one thread on SM 0: whole-chase time / hops (%globaltimer, clock64), a lap of warm-up, \
             median of {reps} launches per point",
            path.name()
        );
        let st = strides(path);
        let by_stride = sm_chase::stride_sweep(t, b, path, STRIDE_FOOTPRINT, &st, reps)?;
        let ys: Vec<f64> = by_stride.iter().map(|p| p.median_ns()).collect();
        let unit = fetch_unit(&st, &ys);
        let fmethod = format!(
            "ascending walk over 1 MiB at strides {}..512 B: the smallest stride from which every hop misses ({instrument})",
            st[0]
        );
        if let Some(k) = pk.fetch {
            out.finding(
                k,
                match unit {
                    Some(u) => Finding::integer(u, "bytes", &fmethod, Confidence::High)
                        .with_note("the unit a miss of this path fetches (a sector where the cache is sectored; the line is l1.line_bytes)"),
                    None => Finding::undetermined("bytes", &fmethod, &format!("no clear step in the latency by stride ({})", memscope_core::text::numbers(&ys, "ns"))),
                },
            );
        }
        out.series(
            &format!("texture.{}_by_stride", pk.slug),
            series(
                &by_stride,
                &format!("ns per hop of an ascending {} walk over 1 MiB by stride", path.name()),
                "stride",
                vec![],
            ),
        );

        let cell = unit.unwrap_or(32).clamp(path.cell_bytes(), 128);
        let fps: Vec<u64> = FOOTPRINTS_KIB.iter().map(|k| k << 10).collect();
        let pts = sm_chase::sweep(t, b, path, cell, &fps, reps)?;
        let x: Vec<f64> = pts.iter().map(|p| p.x).collect();
        let y: Vec<f64> = pts.iter().map(|p| p.median_ns()).collect();
        let smethod = format!(
            "latency vs footprint, random cyclic order over cells {cell} B apart, 8 KiB .. 2 MiB ({instrument})"
        );
        let mut marks = Vec::new();
        match two_levels(&x, &y) {
            Some(l) => {
                let hit_pts: Vec<&Point> = pts[l.hit_points.clone()].iter().collect();
                let hit = level_finding(&hit_pts, &format!("first plateau of the {smethod}"), clock);
                if let Some(h) = &hit {
                    out.finding(pk.hit, h.clone());
                }
                match l.capacity {
                    Some(c) => {
                        marks.push(c);
                        let i = l.hit_points.end.min(x.len() - 1);
                        let step = x[i] - x[i - 1];
                        caps.push((path, c, step));
                        out.finding(
                            pk.capacity,
                            Finding::integer(c.round() as u64, "bytes", &format!("knee of the {smethod} (knee.rs)"), Confidence::Medium)
                                .with_note(&format!("resolution: the sweep step at the knee, {} KiB; the chase kernels ask for shared-memory carveout 0 (prefer L1)", step / 1024.0)),
                        );
                    }
                    None => out.finding(
                        pk.capacity,
                        Finding::undetermined("bytes", &smethod, "the curve never leaves its first level up to 2 MiB"),
                    ),
                }
                if let (Some(k), Some(np), Some(h)) = (pk.penalty, &l.next_points, &hit) {
                    let next_pts: Vec<&Point> = pts[np.clone()].iter().collect();
                    if let Some(n) = level_finding(&next_pts, "second plateau", clock) {
                        if let Some(p) = penalty_finding(
                            h,
                            &n,
                            &format!(
                                "the second plateau (the L2 reached through {}) less the first, same sweep",
                                path.name()
                            ),
                        ) {
                            out.finding(
                                k,
                                p.with_note(&format!(
                                    "L2 level through this path: {:.1} ns",
                                    n.as_f64().unwrap_or(f64::NAN)
                                )),
                            );
                        }
                    }
                }
                if let Some(k) = pk.penalty.filter(|k| !out.findings.contains_key(*k)) {
                    out.finding(
                        k,
                        Finding::undetermined("ns", &smethod, "no second plateau after the knee up to 2 MiB"),
                    );
                }
            }
            None => {
                let why = format!("no plateau in the curve ({})", memscope_core::text::numbers(&y, "ns"));
                out.finding(pk.hit, Finding::undetermined("ns", &smethod, &why));
                out.finding(pk.capacity, Finding::undetermined("bytes", &smethod, &why));
                if let Some(k) = pk.penalty {
                    out.finding(k, Finding::undetermined("ns", &smethod, &why));
                }
            }
        }
        out.series(
            &format!("texture.{}_by_footprint", pk.slug),
            series(
                &pts,
                &format!("ns per hop of a random cyclic {} chase by footprint (cells {cell} B apart)", path.name()),
                "footprint",
                marks,
            ),
        );
    }
    // Is the texture path's capacity L1's? Compare the knees (within the coarser sweep step).
    let get = |p: Path| caps.iter().find(|c| c.0 == p).copied();
    if let (Some(tex), Some(ca)) = (get(Path::Tex), get(Path::Ca)) {
        if let Some(f) = out.findings.remove(keys::TEX_TEXTURE_CAPACITY_BYTES) {
            let tol = tex.2.max(ca.2) / tex.1;
            out.finding(
                keys::TEX_TEXTURE_CAPACITY_BYTES,
                f.with_check(
                    ca.1,
                    "the ld.global.ca (L1) knee of the same instrument: the same capacity when they agree",
                    tol,
                ),
            );
        }
    }
    if let (Some(nc), Some(ca)) = (get(Path::Nc), get(Path::Ca)) {
        if let Some(f) = out.findings.remove(keys::TEX_NC_CAPACITY_BYTES) {
            let tol = nc.2.max(ca.2) / nc.1;
            out.finding(
                keys::TEX_NC_CAPACITY_BYTES,
                f.with_check(
                    ca.1,
                    "the ld.global.ca (L1) knee of the same instrument: the same capacity when they agree",
                    tol,
                ),
            );
        }
    }
    Ok(out)
}

impl Probe for TextureProbe {
    fn key(&self) -> &'static str {
        "texture"
    }
    fn description(&self) -> &'static str {
        "read-only (ld.global.nc) and texture paths: latency, capacity, fetch unit, miss penalty, beside L1 in the same chase"
    }
    fn applicability(&self, info: &TargetInfo) -> Applicability {
        match cuda_only(info) {
            Applicability::Applicable => Applicability::Applicable,
            Applicability::Waived(_) => {
                Applicability::Waived("needs a real CUDA GPU: the simulator has no read-only or texture path".into())
            }
        }
    }
    fn run(&self, ctx: &mut ProbeContext<'_>) -> Result<ProbeOutput, ProbeError> {
        let l1 = ctx.earlier.get(keys::L1_HIT_LATENCY_NS).and_then(|f| f.as_f64());
        run_gpu(ctx, |t, quick| measure(t, quick, l1))
    }
}
