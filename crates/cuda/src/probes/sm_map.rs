//! `l2.sm_map`: the per-SM map of the L2 (docs/SM_MEMORIES.md, "The per-SM L2 map"; kernels/sm_map.cu): from
//! every SM in turn, the first-touch time of each line of one cycle over a few 2 MiB pages, primed
//! L2-resident at the lines' home slices with reductions before each launch, split into the near-
//! and the far-partition hit (sm_map_fit.rs); the warm lap's hit and an L1 chase as controls; the
//! SMs grouped by the lines they find far; which SM the other latency findings come from and
//! where it sits in the map. Cycles from clock64, ns at the measured SM clock, with each
//! uninstrumented lap's %globaltimer as the second clock.

use super::sm_map_fit::{group_sms, med_mad, Rep, SmEntry};
use super::{cuda_only_sim_lacks, run_gpu};
use crate::gpu::Module;
use crate::CudaTarget;
use memscope_core::stats::{median, Sample};
use memscope_core::{
    Applicability, Confidence, Finding, Probe, ProbeContext, ProbeError, ProbeOutput, Progress, Series, TargetInfo,
};
use rand::seq::SliceRandom;
use rand::SeedableRng;

pub struct SmMapProbe;

/// Pages the cycle's lines lie in (2 MiB each: few enough for the TLBs, one TLB line each).
const PAGES: u64 = 4;
const PAGE_BYTES: u64 = 2 << 20;
const LINE_BYTES: u64 = 128;
/// Lines of the L1 control's cycle (2 KiB: L1-resident after its warm-up).
const L1_LINES: u64 = 16;
const L1_WARM_HOPS: u64 = 256;
const L1_HOPS: u64 = 4096;
/// The kernel's capacity (kernels/sm_map.cu SM_MAP_MAX_LINES).
const MAX_LINES: u64 = 2048;

/// Lines of the cycle and repetitions per SM.
fn plan(quick: bool) -> (u64, usize) {
    if quick {
        (1024, 3)
    } else {
        (MAX_LINES, 5)
    }
}

impl Probe for SmMapProbe {
    fn key(&self) -> &'static str {
        "l2.sm_map"
    }
    fn description(&self) -> &'static str {
        "per-SM map: near- and far-partition L2 hit from every SM (first touches split in two modes), L1 control, SM groups"
    }
    fn applicability(&self, info: &TargetInfo) -> Applicability {
        cuda_only_sim_lacks(info, "the map primes lines with reductions and times first touches in its own kernel")
    }
    fn run(&self, ctx: &mut ProbeContext<'_>) -> Result<ProbeOutput, ProbeError> {
        let progress = ctx.progress;
        run_gpu(ctx, |t, quick| measure(t, quick, progress))
    }
}

/// The device side: the cycle's lines, the TLB lines, the L1 control's cycle, the prime list.
struct Layout {
    buf: u64,
    l1_buf: u64,
    lines_d: u64,
    /// The cycle's lines in visiting order (hop i of a lap loads lines[i]).
    lines: Vec<u64>,
    tlb: Vec<u64>,
    l1: Vec<u64>,
}

fn place(t: &mut CudaTarget, n: u64) -> Result<Layout, ProbeError> {
    let buf = t.gpu.malloc((PAGES + 1) * PAGE_BYTES)?;
    let base = buf.div_ceil(PAGE_BYTES) * PAGE_BYTES;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0x0531_13a9);
    let per_page = n / PAGES;
    let mut lines = Vec::new();
    let mut tlb = Vec::new();
    for p in 0..PAGES {
        let page = base + p * PAGE_BYTES;
        tlb.push(page);
        let mut cand: Vec<u64> = (1..PAGE_BYTES / LINE_BYTES).map(|i| page + i * LINE_BYTES).collect();
        cand.shuffle(&mut rng);
        lines.extend_from_slice(&cand[..per_page as usize]);
    }
    lines.shuffle(&mut rng);
    let mut image = vec![0u64; ((base - buf + PAGES * PAGE_BYTES) / 8) as usize];
    for cycle in [&lines, &tlb] {
        for (i, &a) in cycle.iter().enumerate() {
            image[((a - buf) / 8) as usize] = cycle[(i + 1) % cycle.len()];
        }
    }
    t.gpu.htod(buf, &image)?;
    let l1_buf = t.gpu.malloc(L1_LINES * LINE_BYTES)?;
    let mut l1: Vec<u64> = (0..L1_LINES).map(|i| l1_buf + i * LINE_BYTES).collect();
    l1.shuffle(&mut rng);
    let mut l1_image = vec![0u64; (L1_LINES * LINE_BYTES / 8) as usize];
    for (i, &a) in l1.iter().enumerate() {
        l1_image[((a - l1_buf) / 8) as usize] = l1[(i + 1) % l1.len()];
    }
    t.gpu.htod(l1_buf, &l1_image)?;
    let lines_d = t.gpu.malloc(n * 8)?;
    t.gpu.htod(lines_d, &lines)?;
    t.gpu.sync()?;
    Ok(Layout { buf, l1_buf, lines_d, lines, tlb, l1 })
}

/// One repetition on SM `sm`: prime, then the chase kernel there (launched again, up to 4 times,
/// while no block landed on it).
fn one_rep(t: &mut CudaTarget, l: &Layout, sm: u32) -> Result<Rep, ProbeError> {
    let n = l.lines.len() as u64;
    let scratch = t.scratch(4096 + 8 * n)?;
    let (claim, out_d, rec_d) = (scratch, scratch + 256, scratch + 4096);
    let null = std::ptr::null_mut();
    t.gpu.launch(Module::SmMap, "sm_map_prime", 8, 256, 0, &[l.lines_d, n], null)?;
    for _ in 0..4 {
        t.gpu.memset(claim, 8)?;
        t.gpu.memset(out_d, 12 * 8)?;
        let args = [
            l.lines[0],
            n,
            l.tlb[0],
            l.tlb.len() as u64,
            l.l1[0],
            L1_WARM_HOPS,
            L1_HOPS,
            sm as u64,
            claim,
            out_d,
            rec_d,
        ];
        t.gpu.launch(Module::SmMap, "sm_map_chase", t.sms * 4, 32, 0, &args, null)?;
        t.gpu.sync()?;
        let o: Vec<u64> = t.gpu.dtoh(out_d, 12)?;
        if o[11] == 0 {
            continue;
        }
        if o[10] != sm as u64 {
            return Err(ProbeError::Failed(format!("the map's chase ran on SM {} instead of {sm}", o[10])));
        }
        let l1_end = l.l1[((L1_WARM_HOPS + L1_HOPS) % L1_LINES) as usize];
        if o[8] != l.lines[0] || o[9] != l1_end {
            return Err(ProbeError::Failed(format!(
                "the map's chase on SM {sm} ended at {:#x} / {:#x}, expected {:#x} / {l1_end:#x}: a cycle was not followed",
                o[8], o[9], l.lines[0]
            )));
        }
        let rec: Vec<u32> = t.gpu.dtoh(rec_d, 2 * n as usize)?;
        let f = |v: &[u32]| v.iter().map(|&c| c as f64).collect::<Vec<f64>>();
        return Ok(Rep {
            first_touch: f(&rec[..n as usize]),
            warm_recorded: f(&rec[n as usize..]),
            warm_cycles: o[1].wrapping_sub(o[0]) as f64 / n as f64,
            warm_ns: o[3].wrapping_sub(o[2]) as f64 / n as f64,
            l1_cycles: o[5].wrapping_sub(o[4]) as f64 / L1_HOPS as f64,
            l1_ns: o[7].wrapping_sub(o[6]) as f64 / L1_HOPS as f64,
        });
    }
    Err(ProbeError::Failed(format!("the map's chase: no block was scheduled on SM {sm} in 4 launches")))
}

fn measure(t: &mut CudaTarget, quick: bool, progress: &dyn Progress) -> Result<ProbeOutput, ProbeError> {
    let started = std::time::Instant::now();
    let (n, reps) = plan(quick);
    let sms = t.sms;
    let l = place(t, n)?;
    let res = (|| -> Result<Vec<Vec<Rep>>, ProbeError> {
        let mut per_sm: Vec<Vec<Rep>> = vec![Vec::new(); sms as usize];
        progress.start(sms as u64 * reps as u64, "per-SM L2 map");
        // Repetitions outermost: a drift of the clock or the chip spreads over every SM alike.
        for _ in 0..reps {
            for sm in 0..sms {
                per_sm[sm as usize].push(one_rep(t, &l, sm)?);
                progress.advance(1);
            }
        }
        Ok(per_sm)
    })();
    for p in [l.buf, l.l1_buf, l.lines_d] {
        t.gpu.free(p);
    }
    let per_sm = res?;
    let entries: Vec<SmEntry> = per_sm.iter().enumerate().map(|(sm, r)| SmEntry::new(sm as u32, r)).collect();
    let method = Method { lines: n, reps, quick };
    Ok(analyze(&entries, t.clock_hz(), &method, started.elapsed().as_secs_f64()))
}

/// What the measurement was, for the findings' method text.
pub struct Method {
    pub lines: u64,
    pub reps: usize,
    pub quick: bool,
}

impl Method {
    fn text(&self) -> String {
        format!(
            "from every SM in turn (pinned by %smid, the first block there claims the run), one thread chases one cycle of \
             {} lines (one pointer per 128-byte line, {PAGES} pages of 2 MiB, random order) with ld.global.cg after \
             reductions adding 0 to each line (L2-resident at its home slice, no copy from an earlier chase): the first \
             touch of each line recorded (clock64 per hop), split in two modes (least squares); less the recording's \
             per-hop cost (a recorded warm lap's mean less an uninstrumented one's); median of {} repetitions per SM",
            self.lines, self.reps
        )
    }
}

/// The SM clock the ns come from: the measured one, else the one the warm laps imply (clock64
/// cycles over %globaltimer ns).
fn clock(entries: &[SmEntry], measured: Option<f64>) -> Option<f64> {
    measured.or_else(|| {
        let r: Vec<f64> = entries
            .iter()
            .flat_map(|e| e.warm.iter().zip(&e.warm_ns).map(|(c, ns)| c / ns * 1e9))
            .filter(|x| x.is_finite() && *x > 0.0)
            .collect();
        (!r.is_empty()).then(|| median(&r))
    })
}

/// A finding over SMs: the median of the per-SM values (ns), their spread over SMs, the cycles.
fn over_sms(ns: &[f64], cycles: &[f64], method: &str, confidence: Confidence) -> Finding {
    match (Sample::new(ns), Sample::new(cycles)) {
        (Ok(s), Ok(c)) => {
            Finding::number(s.median(), "ns", method, confidence).with_spread(s.spread()).with_cycles(c.median())
        }
        _ => Finding::undetermined("ns", method, "no SM gave a value"),
    }
}

/// The position of SM `sm`'s value among all (1 = the smallest), as "k of n".
fn rank(values: &[(u32, f64)], sm: u32) -> Option<String> {
    let v = values.iter().find(|(s, _)| *s == sm)?.1;
    let k = values.iter().filter(|(_, x)| *x < v).count() + 1;
    Some(format!("{k} of {}", values.len()))
}

/// The findings and series of the map (pure: the probe's analysis, tested on synthetic entries).
pub fn analyze(entries: &[SmEntry], measured_hz: Option<f64>, m: &Method, seconds: f64) -> ProbeOutput {
    let mut out = ProbeOutput::default();
    let method = m.text();
    let Some(hz) = clock(entries, measured_hz) else {
        for k in ["near_hit_latency_ns", "far_hit_latency_ns", "warm_hit_latency_ns", "l1_hit_latency_ns"] {
            out.finding(
                &format!("l2.sm_map.{k}"),
                Finding::undetermined("ns", &method, "no SM clock to convert cycles"),
            );
        }
        return out;
    };
    let ns = |c: f64| c / hz * 1e9;
    let split: Vec<&SmEntry> = entries.iter().filter(|e| e.reps_split > 0).collect();
    let near_c: Vec<(u32, f64)> = split.iter().map(|e| (e.sm, median(&e.near))).collect();
    let far_c: Vec<(u32, f64)> = split.iter().map(|e| (e.sm, median(&e.far))).collect();
    let near_ns: Vec<(u32, f64)> = near_c.iter().map(|&(s, c)| (s, ns(c))).collect();
    let far_ns: Vec<(u32, f64)> = far_c.iter().map(|&(s, c)| (s, ns(c))).collect();
    let all_split = entries.iter().all(|e| e.reps_split == e.reps && e.reps > 0);
    // Repeatability within the run: each SM's MAD over repetitions relative to its median.
    let rel = |v: &[f64]| {
        let (m, d) = med_mad(v);
        d / m
    };
    let worst_near = split.iter().map(|e| rel(&e.near)).fold(0.0f64, f64::max);
    let worst_far = split.iter().map(|e| rel(&e.far)).fold(0.0f64, f64::max);
    let confidence =
        if all_split && worst_near < 0.01 && worst_far < 0.01 { Confidence::High } else { Confidence::Medium };
    let vals = |v: &[(u32, f64)]| v.iter().map(|x| x.1).collect::<Vec<f64>>();
    let line_mad = |f: &dyn Fn(&SmEntry) -> &Vec<f64>| {
        let v: Vec<f64> = split.iter().flat_map(|e| f(e).iter().copied()).collect();
        if v.is_empty() {
            f64::NAN
        } else {
            ns(median(&v))
        }
    };
    let splits_note = format!(
        "{} of {} SMs split their first touches in two modes ({} of {} repetitions in all); the worst SM's MAD over \
         repetitions: {:.2} % (near), {:.2} % (far) of its median",
        split.len(),
        entries.len(),
        entries.iter().map(|e| e.reps_split).sum::<usize>(),
        entries.iter().map(|e| e.reps).sum::<usize>(),
        100.0 * worst_near,
        100.0 * worst_far
    );
    let warm: Vec<(u32, f64)> = entries.iter().map(|e| (e.sm, median(&e.warm))).collect();
    let warm_gt: Vec<f64> = entries.iter().map(|e| median(&e.warm_ns)).collect();
    let l1: Vec<(u32, f64)> = entries.iter().map(|e| (e.sm, median(&e.l1))).collect();
    let l1_gt: Vec<f64> = entries.iter().map(|e| median(&e.l1_ns)).collect();
    if split.len() * 2 < entries.len().max(1) {
        let why = format!(
            "the first touches did not split in two modes on most SMs ({} of {}): no far partition seen, or the \
             reductions left copies near",
            split.len(),
            entries.len()
        );
        out.finding("l2.sm_map.near_hit_latency_ns", Finding::undetermined("ns", &method, &why));
        out.finding("l2.sm_map.far_hit_latency_ns", Finding::undetermined("ns", &method, &why));
    } else {
        let near = over_sms(&vals(&near_ns), &vals(&near_c), &method, confidence)
            .with_note(&format!(
                "spread over SMs (the per-SM medians); the lines' own MAD within the near mode: {:.2} ns; {splits_note}",
                line_mad(&|e| &e.near_line_mad)
            ))
            .with_check(
                median(&warm_gt),
                "the same lines once held near (the second and later laps), uninstrumented, %globaltimer, median over SMs",
                memscope_core::CHECK_TOLERANCE,
            );
        out.finding("l2.sm_map.near_hit_latency_ns", near);
        let far = over_sms(&vals(&far_ns), &vals(&far_c), &method, confidence).with_note(&format!(
            "spread over SMs (the per-SM medians); the lines' own MAD within the far mode: {:.2} ns; {splits_note}",
            line_mad(&|e| &e.far_line_mad)
        ));
        out.finding("l2.sm_map.far_hit_latency_ns", far);
        let frac: Vec<f64> = split.iter().map(|e| median(&e.far_fraction)).collect();
        if let Ok(s) = Sample::new(&frac) {
            out.finding(
                "l2.sm_map.far_fraction",
                Finding::number(s.median(), "ratio", &method, confidence)
                    .with_spread(s.spread())
                    .with_note("the share of the cycle's lines in the far mode, median over SMs"),
            );
        }
    }
    let warm_ns: Vec<f64> = warm.iter().map(|x| ns(x.1)).collect();
    out.finding(
        "l2.sm_map.warm_hit_latency_ns",
        over_sms(
            &warm_ns,
            &vals(&warm),
            "the map's cycle on its third lap (every line already touched from this SM), uninstrumented: clock64 over \
             the lap / hops, median over repetitions per SM, median over SMs",
            Confidence::High,
        )
        .with_check(
            median(&warm_gt),
            "%globaltimer over the same laps, median over SMs",
            memscope_core::CHECK_TOLERANCE,
        ),
    );
    let l1_ns: Vec<f64> = l1.iter().map(|x| ns(x.1)).collect();
    out.finding(
        "l2.sm_map.l1_hit_latency_ns",
        over_sms(
            &l1_ns,
            &vals(&l1),
            &format!(
                "the control: {L1_LINES} lines through L1 (ld.global.ca) on each SM, {L1_WARM_HOPS} warm-up then {L1_HOPS} \
                 timed hops, clock64, median over repetitions per SM, median over SMs"
            ),
            Confidence::High,
        )
        .with_check(median(&l1_gt), "%globaltimer over the same hops, median over SMs", memscope_core::CHECK_TOLERANCE),
    );

    // Groups: the SMs that find the same lines far.
    let groups = group_sms(entries);
    let group_of = |sm: u32| groups.iter().position(|g| g.contains(&sm));
    let pick = |v: &[(u32, f64)], g: &[u32]| v.iter().filter(|x| g.contains(&x.0)).map(|x| x.1).collect::<Vec<f64>>();
    let listed: Vec<serde_json::Value> = groups
        .iter()
        .map(|g| {
            serde_json::json!({
                "sms": g,
                "near_ns": median(&pick(&near_ns, g)),
                "far_ns": median(&pick(&far_ns, g)),
            })
        })
        .collect();
    let gmethod = format!(
        "SMs whose far lines (majority over repetitions) differ on at most {:.0} % of the lines form a group \
         (each SM compared with each group's first member, in SM order)",
        100.0 * super::sm_map_fit::MAX_GROUP_DISAGREEMENT
    );
    if groups.is_empty() {
        out.finding("l2.sm_map.groups", Finding::undetermined("", &gmethod, "no SM split its lines in two modes"));
    } else {
        let complement = (groups.len() == 2)
            .then(|| {
                let a = entries.iter().find(|e| e.sm == groups[0][0])?.far_lines();
                let b = entries.iter().find(|e| e.sm == groups[1][0])?.far_lines();
                super::sm_map_fit::disagreement(&a, &b)
            })
            .flatten();
        let note = match complement {
            Some(d) => format!(
                "{} groups; their first members classify {:.1} % of the lines differently (100 %: one group's far lines are \
                 the other's near ones, two L2 partitions)",
                groups.len(),
                100.0 * d
            ),
            None => format!("{} group(s)", groups.len()),
        };
        out.finding(
            "l2.sm_map.groups",
            Finding::json(serde_json::json!(listed), "", &gmethod, Confidence::Medium).with_note(&note),
        );
    }

    // Where the SMs the other latency findings come from sit in the map.
    let last = entries.len().saturating_sub(1) as u32;
    let refs: Vec<serde_json::Value> = [
        (0u32, "the latency probe's levels (l1.hit_latency_ns, l2.hit_latency_ns, dram.latency_ns) run on SM 0"),
        (
            last,
            "the latency probe's second opinions (l2.far_hit_latency_ns, l2.segment_capacity_bytes) run on the last SM",
        ),
    ]
    .iter()
    .filter(|(sm, _)| entries.iter().any(|e| e.sm == *sm))
    .map(|&(sm, why)| {
        serde_json::json!({
            "sm": sm,
            "why": why,
            "group": group_of(sm).map(|g| g + 1),
            "near_ns": near_ns.iter().find(|x| x.0 == sm).map(|x| x.1),
            "far_ns": far_ns.iter().find(|x| x.0 == sm).map(|x| x.1),
            "near_rank": rank(&near_ns, sm),
            "far_rank": rank(&far_ns, sm),
        })
    })
    .collect();
    out.finding(
        "l2.sm_map.reference_sms",
        Finding::json(
            serde_json::json!(refs),
            "",
            "the map's entries of SM 0 and the last SM; rank: position among all SMs from the fastest",
            Confidence::Medium,
        ),
    );
    out.finding(
        "l2.sm_map.probe_seconds",
        Finding::number(
            (seconds * 10.0).round() / 10.0,
            "s",
            "wall time of the probe",
            if m.quick { Confidence::Low } else { Confidence::Medium },
        ),
    );

    // Series: per group, near and far by SM (ns, MAD over repetitions); the L1 control.
    let series = |desc: String, pts: Vec<(u32, f64, f64)>| Series {
        description: desc,
        x_name: "SM".into(),
        x_unit: String::new(),
        y_name: "latency".into(),
        y_unit: "ns".into(),
        x: pts.iter().map(|p| p.0 as f64).collect(),
        y: pts.iter().map(|p| p.1).collect(),
        y_spread: Some(pts.iter().map(|p| p.2).collect()),
        marks: vec![],
    };
    for (gi, g) in groups.iter().enumerate() {
        for (what, f) in [("near", (|e: &SmEntry| &e.near) as fn(&SmEntry) -> &Vec<f64>), ("far", |e: &SmEntry| &e.far)]
        {
            let pts: Vec<(u32, f64, f64)> = split
                .iter()
                .filter(|e| g.contains(&e.sm))
                .map(|e| {
                    let (m, d) = med_mad(f(e));
                    (e.sm, ns(m), ns(d))
                })
                .collect();
            out.series(
                &format!("l2.sm_map.{what}_g{}", gi + 1),
                series(
                    format!(
                        "{what}-partition L2 hit (first touch) of the SMs of group {} (the SMs that find the same lines far), \
                         median over repetitions, spread their MAD",
                        gi + 1
                    ),
                    pts,
                ),
            );
        }
    }
    let l1_pts: Vec<(u32, f64, f64)> = entries
        .iter()
        .map(|e| {
            let (m, d) = med_mad(&e.l1);
            (e.sm, ns(m), ns(d))
        })
        .collect();
    out.series(
        "l2.sm_map.l1_control",
        series("L1 hit of each SM (the control), median over repetitions".into(), l1_pts),
    );
    out
}
