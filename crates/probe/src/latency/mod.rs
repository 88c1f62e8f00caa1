//! `latency`: latency versus footprint through the L1-cached and the L1-bypassing path (seed 000
//! appendix, "A latency chase"). The levels' latencies (L1, near L2 by both paths, DRAM) are the
//! uninstrumented instrument (`Meter::latency`: whole-chase time over hops) with the host clock's
//! slope as second opinion; per-hop records classify the sweeps' hops (their cost is measured and
//! subtracted where per-hop times give a level: the far-L2 cluster, the series). The L1 capacity is
//! the knee refined by bisection on the line count (and again on another SM); the L2 segment one SM
//! sees is the half-way footprint (l2/segment.rs); the L2 size is the driver's attribute where the
//! target has one, else the retained-line count. `LatencyProbe::run` is the sequence of steps
//! below; sweep.rs holds the sweeps, far_level.rs the levels read from them, capacity.rs the
//! capacity searches, penalty.rs the miss penalties derived from this probe's findings.

pub mod capacity;
pub mod dram_lap;
pub mod far_level;
pub mod penalty;
pub mod sweep;

pub use capacity::bisect_capacity;
pub use far_level::{analyze, cluster_median, far_mode, intermediate, Levels3};
pub use sweep::{dense_lines, DramLevel, Point};

use crate::measure::{earlier_f64, earlier_u64, gpu_applicability, LatencyReading, Levels, Meter, Timing};
use capacity::l2_retained;
use memscope_core::keys;
use memscope_core::{
    Applicability, CachePath, Confidence, Finding, Probe, ProbeContext, ProbeError, ProbeOutput, Series, TargetInfo,
};
use sweep::{refine_toward_dram, sweep};

/// Hops of the recorded chases at the L1 and L2 levels (the most the CUDA target records).
pub(crate) const RECORDED_HOPS: u64 = 1 << 20;
/// Timed hops of the shorter uninstrumented latency chase (the longer has twice as many).
pub(crate) const PLAIN_HOPS: u64 = 100_000;

pub struct LatencyProbe;

impl Probe for LatencyProbe {
    fn key(&self) -> &'static str {
        "latency"
    }
    fn description(&self) -> &'static str {
        "latency vs footprint through L1 and past it: hit latencies, capacities, far-L2 plateau, DRAM"
    }
    fn applicability(&self, info: &TargetInfo) -> Applicability {
        gpu_applicability(info, true)
    }
    /// The TLB probe's page, entries and miss cost shape the cold DRAM lap (dram_lap.rs) where
    /// it ran: it runs before this probe, but is not needed (a --quick run leaves it out; the
    /// lap then takes 4 KiB pages, 4 in turn, and takes off no TLB share).
    fn needs(&self) -> &'static [&'static str] {
        &["line"]
    }
    fn run(&self, ctx: &mut ProbeContext<'_>) -> Result<ProbeOutput, ProbeError> {
        let quick = ctx.quick;
        let progress = ctx.progress;
        let earlier = ctx.earlier.clone();
        let mut m = Meter::new(&mut *ctx.target, 11);
        let stride = crate::l1::ways_sets::line_bytes(&mut m, &earlier)?;
        let max_bytes: u64 = if quick { 256 << 20 } else { 512 << 20 };
        let buf = m.alloc(max_bytes)?;
        let mut c = Chases { info: m.info.clone(), m, base: buf.base, stride, max_bytes, quick, earlier };
        let mut out = ProbeOutput::default();

        let fixed = c.fixed_points()?;
        progress.start(40, "latency sweeps");
        let cached = sweep(
            &mut c.m,
            c.base,
            stride,
            (8 << 20).min(max_bytes),
            CachePath::L1Cached,
            Some(fixed.l2_level),
            progress,
        )?;
        let mut bypass =
            sweep(&mut c.m, c.base, stride, max_bytes, CachePath::L1Bypass, Some(fixed.dram_level), progress)?;
        refine_toward_dram(&mut c.m, c.base, stride, &mut bypass, fixed.l2_ns, &fixed.dram_level)?;
        let (l2_read, l2_footprint) = c.near_l2_read(&fixed, &bypass)?;
        let pts = |v: &[Point]| v.iter().map(|p| (p.bytes as f64, p.typical_ns)).collect::<Vec<_>>();
        let lv = analyze(&pts(&cached), &pts(&bypass));

        c.hit_latencies(&fixed, &l2_read, l2_footprint, &mut out);
        let l1_capacity = c.l1_capacity(&fixed, &cached)?;
        let l1_cap = l1_capacity.value.as_u64().unwrap_or(256 << 10);
        out.finding(keys::L1_CAPACITY_BYTES, l1_capacity);
        out.finding(keys::L2_HIT_LATENCY_L1_PATH_NS, c.l2_through_l1(l1_cap)?);
        let (far, far_ns) = c.far_l2(&fixed, &lv, &bypass)?;
        out.finding(keys::L2_FAR_HIT_LATENCY_NS, far);
        // The level a hop leaves the near L2 for: the far partition where there is one, else DRAM.
        let top_ns = far_ns.map_or(fixed.l2_ns, |ns| ns.max(fixed.l2_ns));
        let leave_ns =
            if top_ns > fixed.l2_ns * 1.1 { 0.5 * (fixed.l2_ns + top_ns) } else { 0.5 * (fixed.l2_ns + fixed.dram_ns) };
        out.finding(keys::L2_SEGMENT_CAPACITY_BYTES, c.segment(&bypass, leave_ns)?);
        out.finding(keys::L2_CAPACITY_BYTES, c.l2_capacity(&fixed, &bypass, top_ns)?);
        sweep_series(&fixed, &lv, &cached, &bypass, &mut out);
        c.m.target.free(buf);
        Ok(out)
    }
}

/// The chase setting every step shares: the meter, the buffer's base, the line stride.
struct Chases<'a> {
    m: Meter<'a>,
    info: TargetInfo,
    base: u64,
    stride: u64,
    max_bytes: u64,
    quick: bool,
    /// The earlier probes' findings (the TLB's page, entries and miss cost for the DRAM lap).
    earlier: std::collections::BTreeMap<String, memscope_core::Finding>,
}

/// The fixed points measured before the sweeps: the levels' per-hop distributions (L1 hit, L2
/// hit over few lines of one block, DRAM by one cold lap) and their uninstrumented latencies.
struct FixedPoints {
    /// A 2 KiB dense block of lines (at least 4).
    few: Vec<u64>,
    /// How many of `few` the L1 hit was read over (all or the first 2).
    l1_lines: usize,
    l1_read: LatencyReading,
    l2_few: LatencyReading,
    /// The lines of the cold DRAM laps.
    cold_lines: usize,
    /// How the cold lap's lines were chosen and the TLB share taken off its hops.
    dram_how: String,
    dram_tlb_share_ns: f64,
    dram_read: LatencyReading,
    /// The recorded L1 and L2 chases (their hits set the floors of the miss counts).
    l1: Timing,
    l2: Timing,
    l1_ns: f64,
    l2_ns: f64,
    dram_ns: f64,
    l2_level: DramLevel,
    dram_level: DramLevel,
    /// What recording each hop adds, at the L1 and at the L2 level.
    overhead_l1: f64,
    overhead: f64,
}

impl Chases<'_> {
    fn fixed_points(&mut self) -> Result<FixedPoints, ProbeError> {
        let (m, base, stride) = (&mut self.m, self.base, self.stride);
        let few = dense_lines(m, base, stride, (2048 / stride).max(4));
        // The L1 hit from the smaller mean of 2 KiB of lines and 2 of them: with few ways and an
        // index function over high bits, 2 KiB of lines can crowd one L1 set past its ways, so
        // some hops miss (2 lines fit any set of 2 or more ways). Means, not per-hop medians: a
        // few missing hops move the mean (what the level latency is) but not the median. Both
        // alternatives are read by the uninstrumented instrument below; the recorded chase of
        // the chosen lines gives the per-hop distribution. (2^20 recorded hops: their mean, less
        // the uninstrumented mean over the same lines, is the instrument's per-hop cost to a
        // small fraction of a ns even under simulated noise)
        let l1_read_block = m.latency(&few, CachePath::L1Cached, PLAIN_HOPS, 2)?;
        let l1_read_two = m.latency(&few[..2], CachePath::L1Cached, PLAIN_HOPS, 2)?;
        let (l1_read, l1_lines) =
            if l1_read_two.ns < l1_read_block.ns { (l1_read_two, 2) } else { (l1_read_block, few.len()) };
        let l1 = m.chase(&few[..l1_lines], CachePath::L1Cached, 200, RECORDED_HOPS, 2)?;
        let l2 = m.chase(&few, CachePath::L1Bypass, 200, RECORDED_HOPS, 2)?;
        // The cold lap: every hop a row miss (dram_lap.rs), its TLB misses taken off below.
        let page = earlier_u64(&self.earlier, keys::TLB_PAGE_BYTES);
        let entries = earlier_u64(&self.earlier, keys::TLB_L1_ENTRIES);
        let line = stride.max(128);
        let at =
            if dram_lap::lap_bytes(line, page, entries, 4096) + (64 << 20) <= self.max_bytes { 64 << 20 } else { 0 };
        let lap = dram_lap::row_miss_lines(m.rng(), base + at, line, page, entries, 4096);
        let cold = lap.lines.clone();
        let dram = m.cold_lap(&cold, CachePath::L1Bypass)?;
        let (l1_ns, l2_ns, dram_ns) = (l1.typical_ns(), l2.typical_ns(), dram.typical_ns());
        let dram_level = DramLevel::new(&dram, dram_ns, l2_ns);
        let l2_level = DramLevel::new(&l2, l2_ns, l1_ns);

        // The levels' latencies by seed 000's instrument: whole-chase time over hops, nothing but
        // the dependent loads inside the timed region (Meter::latency), with the host clock's
        // slope as the second opinion.
        let l2_few = m.latency(&few, CachePath::L1Bypass, PLAIN_HOPS, 2)?;
        // One TLB miss per page the lap enters (the flush empties the TLB): the lap's share of
        // them per hop, from the TLB probe's miss cost, is not the DRAM's.
        let tlb_miss_ns = earlier_f64(&self.earlier, keys::TLB_L1_MISS_NS).unwrap_or(0.0).max(0.0);
        let tlb_share_ns = tlb_miss_ns * lap.pages as f64 / cold.len() as f64;
        let dram_read = m.cold_latency(&cold, CachePath::L1Bypass, 5)?.less_per_hop(tlb_share_ns, m.info.clock_hz);
        // What recording each hop adds to it (per-hop records for the distributions only): the
        // recorded chase's mean hop less the uninstrumented mean over the same lines.
        let overhead_l1 = if m.per_hop() { l1.mean_ns() - l1_read.ns } else { 0.0 };
        let overhead = if m.per_hop() { l2.mean_ns() - l2_few.ns } else { 0.0 };
        Ok(FixedPoints {
            few,
            l1_lines,
            l1_read,
            l2_few,
            cold_lines: cold.len(),
            dram_how: lap.how,
            dram_tlb_share_ns: tlb_share_ns,
            dram_read,
            l1,
            l2,
            l1_ns,
            l2_ns,
            dram_ns,
            l2_level,
            dram_level,
            overhead_l1,
            overhead,
        })
    }

    /// The near-L2 hit over many lines, so the mean covers the partition's slices whatever the
    /// physical placement: an eighth of the last footprint on the near plateau (far from filling a
    /// set), at most 1 MiB. Returns the reading and its footprint in bytes.
    fn near_l2_read(&mut self, fixed: &FixedPoints, bypass: &[Point]) -> Result<(LatencyReading, u64), ProbeError> {
        let stride = self.stride;
        // On the plateau, every hop is an L2 hit: the median near the L2 level, and no more hops
        // faster than 0.9 x the L2 hit than the L2 chase over few lines had (a footprint past the
        // near L2 can meet a level that reads faster than its hit, such as the simulator's open
        // DRAM rows where its activation exceeds its latency, and its mean then falls below the
        // L2's).
        let fast = |t: &Timing| t.fraction_in(f64::NEG_INFINITY, 0.9 * fixed.l2_ns);
        let fast_l2 = fast(&fixed.l2).unwrap_or(0.0);
        let near_end = bypass
            .iter()
            .take_while(|p| p.typical_ns < fixed.l2_ns * 1.1 && fast(&p.timing).is_none_or(|f| f <= fast_l2 + 0.01))
            .last()
            .map_or(0, |p| p.bytes);
        // Within half the L1 TLB's reach where the TLB probe found it: a cyclic chase over more
        // pages than the TLB holds pays a translation miss per page, which is not the L2's.
        let tlb_reach = match (
            earlier_u64(&self.earlier, keys::TLB_PAGE_BYTES),
            earlier_u64(&self.earlier, keys::TLB_L1_ENTRIES),
        ) {
            (Some(page), Some(entries)) => page * (entries / 2).max(1),
            _ => u64::MAX,
        };
        let l2_bytes = (near_end / 8).min(1 << 20).min(tlb_reach) / stride * stride;
        if l2_bytes > fixed.few.len() as u64 * stride {
            let lines = dense_lines(&mut self.m, self.base, stride, l2_bytes / stride);
            let read = self.m.latency(&lines, CachePath::L1Bypass, PLAIN_HOPS.max(2 * lines.len() as u64), 1)?;
            // The TLB unknown: the larger footprint may pay translation misses, the 2 KiB block
            // (one page) cannot; the smaller of the two.
            if tlb_reach == u64::MAX && fixed.l2_few.ns < read.ns {
                return Ok((fixed.l2_few.clone(), fixed.few.len() as u64 * stride));
            }
            Ok((read, l2_bytes))
        } else {
            Ok((fixed.l2_few.clone(), fixed.few.len() as u64 * stride))
        }
    }

    /// The L1, L2 and DRAM latency findings and the per-hop overhead.
    fn hit_latencies(&self, fixed: &FixedPoints, l2_read: &LatencyReading, l2_footprint: u64, out: &mut ProbeOutput) {
        let info = &self.info;
        out.finding(
            keys::L1_HIT_LATENCY_NS,
            fixed.l1_read.finding(info, &plain_method(
                &fixed.l1_read,
                &format!(
                    "L1-cached, {} lines of one block: the smaller mean of {} lines and 2 of them, so a hashed index that crowds one set cannot add misses",
                    fixed.l1_lines,
                    fixed.few.len()
                ),
            )),
        );
        out.finding(
            keys::L2_HIT_LATENCY_NS,
            l2_read
                .finding(info, &plain_method(l2_read, &format!("L1-bypassing, {l2_footprint}-byte dense footprint"))),
        );
        out.finding(
            keys::DRAM_LATENCY_NS,
            fixed.dram_read.finding(
                info,
                &format!(
                    "uninstrumented cold laps over {} lines after a flush each, L1-bypassing, on SM 0: lap time / hops, median of {} laps (a mean over every hop: refresh stalls included, see dram.refresh_*); every hop a row miss: {}; less the lap's TLB misses, {:.2} ns a hop (one per page, tlb.l1.miss_ns)",
                    fixed.cold_lines,
                    fixed.dram_read.sample.len(),
                    fixed.dram_how,
                    fixed.dram_tlb_share_ns
                ),
            ),
        );
        if self.m.per_hop() {
            let (overhead, overhead_l1) = (fixed.overhead, fixed.overhead_l1);
            out.finding(
                keys::LATENCY_PER_HOP_OVERHEAD_NS,
                Finding::number(overhead, "ns", "median hop of a chase with per-hop records less the uninstrumented latency, L2 hits", Confidence::Medium)
                    .with_note(&format!(
                        "what recording each hop's time (a clock read and a store) adds to it; {overhead_l1:.2} ns at the L1 level; subtracted from the per-hop series and from the far-L2 cluster"
                    ))
                    .with_cycles_from(info.clock_hz),
            );
        }
    }

    /// L1 capacity: the knee of the cached curve, refined by bisection on the line count (and the
    /// same bisection on another SM as the second opinion).
    fn l1_capacity(&mut self, fixed: &FixedPoints, cached: &[Point]) -> Result<Finding, ProbeError> {
        let (base, stride) = (self.base, self.stride);
        let info = &self.info;
        let l1_levels = Levels::new(fixed.l1_ns, fixed.l2_ns).with_floor_from(&fixed.l1);
        let first_miss = cached.iter().position(|p| p.typical_ns > fixed.l1_ns + 0.5 * (fixed.l2_ns - fixed.l1_ns));
        let i = match first_miss {
            Some(i) if i > 0 && l1_levels.separable() => i,
            _ => {
                return Ok(Finding::undetermined(
                    "bytes",
                    "L1-cached sweep",
                    "no step from the L1 hit level to the L2 level on the L1-cached sweep",
                ))
            }
        };
        let lo = cached[i - 1].bytes / stride;
        let hi = cached[i].bytes / stride;
        let (fit, _) = bisect_capacity(&mut self.m, base, stride, CachePath::L1Cached, l1_levels, lo, hi, 0.0, 24)?;
        let detail = |k: &str| info.details.get(k).map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string));
        let mut note = String::from("exact when the set-index function is full-rank on the low line bits; otherwise a lower bound (l1.sets comes from the index function)");
        if let Some(c) = detail("chase_shared_carveout") {
            note += &format!("; measured at the chase kernels' shared-memory carveout: {c}");
        }
        if let Some(sh) = detail("max_shared_per_sm_bytes_attribute") {
            note += &format!("; largest shared memory per SM (driver attribute): {sh} bytes");
        }
        let mut f = Finding::integer(
            fit * stride,
            "bytes",
            "largest dense footprint with no L1 misses (bisection on lines, SM 0)",
            Confidence::Medium,
        )
        .with_note(&note);
        if info.units > 1 {
            // Second opinion: the same bisection on another SM (each SM has its own L1).
            let other = info.units - 1;
            self.m.sm = Some(other);
            let (fit_other, _) =
                bisect_capacity(&mut self.m, base, stride, CachePath::L1Cached, l1_levels, lo, hi, 0.0, 24)?;
            self.m.sm = Some(0);
            f = f.with_check(
                (fit_other * stride) as f64,
                &format!("the same bisection on SM {other}"),
                memscope_core::CHECK_TOLERANCE,
            );
        }
        Ok(f)
    }

    /// The L2 hit through the L1-cached path (an L1 miss, then the L2): a dense footprint of four
    /// times the L1 capacity, which a cyclic chase misses in L1 on every hop.
    fn l2_through_l1(&mut self, l1_cap: u64) -> Result<Finding, ProbeError> {
        let stride = self.stride;
        let through = dense_lines(&mut self.m, self.base, stride, (4 * l1_cap / stride).max(8));
        let through_read =
            self.m.latency(&through, CachePath::L1Cached, PLAIN_HOPS.max(2 * through.len() as u64), 1)?;
        Ok(through_read.finding(
            &self.info,
            &plain_method(
                &through_read,
                &format!(
                    "L1-cached loads over {} bytes, four times the L1 capacity: every hop an L1 miss and an L2 hit",
                    through.len() as u64 * stride
                ),
            ),
        ))
    }

    /// Far L2: an intermediate plateau between the L2 hit level and DRAM, else (per-hop times) a
    /// cluster of hops between the two levels. Per-hop times carry the instrument's overhead,
    /// measured in the fixed points and subtracted. Returns the finding and the far level's
    /// median per-hop time (before the overhead is subtracted) where there is one.
    fn far_l2(
        &mut self,
        fixed: &FixedPoints,
        lv: &Levels3,
        bypass: &[Point],
    ) -> Result<(Finding, Option<f64>), ProbeError> {
        let (base, stride, overhead) = (self.base, self.stride, fixed.overhead);
        let (l2_ns, dram_ns) = (fixed.l2_ns, fixed.dram_ns);
        let mids = intermediate(&lv.bypass, l2_ns, dram_ns);
        let far = match (mids.first(), far_mode(bypass, l2_ns, &fixed.dram_level)) {
            (Some(p), _) => Some((
                p.latency,
                Some(((p.x_first * p.x_last).sqrt() as u64 / stride).max(1) * stride),
                "intermediate plateau of the L1-bypassing sweep",
                format!("plateau from {} to {} bytes", p.x_first, p.x_last),
            )),
            (None, Some((ns, frac, bytes))) => Some((
                ns,
                Some(bytes),
                "cluster of per-hop times between the L2 hit level and DRAM, L1-bypassing sweep",
                format!(
                    "{:.0}% of the hops at a {bytes}-byte footprint (the rest: near-L2 hits or DRAM); no plateau of medians",
                    frac * 100.0
                ),
            )),
            _ => None,
        };
        let Some((ns, at_bytes, method, note)) = far else {
            return Ok((
                Finding::undetermined(
                    "ns",
                    "L1-bypassing sweep",
                    "no intermediate plateau between the L2 hit level and DRAM: one L2 partition as seen from this SM",
                ),
                None,
            ));
        };
        // The value: the median of the hops between the near-L2 and DRAM levels at the plateau's
        // middle footprint (the far hits alone; a plateau's median per-hop time mixes in near hits
        // and DRAM reads and sat 5.7 % above it on the H200), from this SM; the same from the last
        // SM is the second opinion.
        let between = |t: &Timing| cluster_median(t, l2_ns * 1.1, dram_ns * 0.9);
        let units = self.info.units;
        let mut home = None;
        let mut away = None;
        if let Some(bytes) = at_bytes {
            let lines = dense_lines(&mut self.m, base, stride, bytes / stride);
            let mut spec = memscope_core::ChaseSpec::new(lines, CachePath::L1Bypass, (bytes / stride).max(4000));
            spec.warmup_laps = 1;
            home = between(&self.m.run(spec.clone())?);
            if units > 1 {
                spec.sm = Some(units - 1);
                away = between(&self.m.run(spec)?);
            }
        }
        let (value, how) = match home {
            Some(c0) => (
                c0 - overhead,
                format!(
                    "median of the hops between the near-L2 and DRAM levels at a {}-byte footprint ({method}), less the per-hop overhead ({overhead:.2} ns)",
                    at_bytes.unwrap_or(0)
                ),
            ),
            None => (ns - overhead, format!("{method}, less the per-hop overhead ({overhead:.2} ns)")),
        };
        let mut f = Finding::number(value, "ns", &how, Confidence::Medium)
            .with_cycles_from(self.info.clock_hz)
            .with_note(&format!("{note}; the median per-hop time of that {method}: {:.1} ns", ns - overhead));
        if let Some(c) = away {
            f = f.with_check(
                c - overhead,
                &format!(
                    "the same footprint chased from SM {}: median of its hops between the levels, less the overhead",
                    units - 1
                ),
                memscope_core::CHECK_TOLERANCE,
            );
        }
        Ok((f, Some(ns)))
    }

    /// The L2 segment one SM's chase sees: the footprint at which half of the hops have left the
    /// near-L2 level (slower than `leave_ns`; bisection in footprint), and the same from another SM.
    fn segment(&mut self, bypass: &[Point], leave_ns: f64) -> Result<Finding, ProbeError> {
        use crate::l2::segment::half_way;
        let (base, stride, quick) = (self.base, self.stride, self.quick);
        let Some(s) = half_way(&mut self.m, base, stride, bypass, leave_ns, None, quick)? else {
            return Ok(Finding::undetermined(
                "bytes",
                "L1-bypassing sweep",
                "no sweep point has half of its hops beyond the near-L2 level",
            ));
        };
        let mut f = Finding::integer(
            s.bytes,
            "bytes",
            "footprint at which half of a dense chase's hops leave the near-L2 level (SM 0; bisection between sweep points, log-interpolated)",
            Confidence::Medium,
        )
        .with_note(&format!(
            "the L2 capacity one SM's chase sees (one partition of a partitioned L2); hops slower than {leave_ns:.1} ns counted as having left the near level; bracket {} .. {} bytes",
            s.lo_bytes, s.hi_bytes
        ));
        if self.info.units > 1 {
            let other = self.info.units - 1;
            if let Some(o) = half_way(&mut self.m, base, stride, bypass, leave_ns, Some(other), quick)? {
                f = f.with_check(
                    o.bytes as f64,
                    &format!("the same bisection from SM {other}"),
                    memscope_core::CHECK_TOLERANCE,
                );
            }
        }
        Ok(f)
    }

    /// L2 capacity: the driver's attribute where the target reports one; otherwise lines retained
    /// as seen from this SM (reverse-lap count), else the last footprint on the L2 plateau refined
    /// by bisection (a lower bound).
    fn l2_capacity(&mut self, fixed: &FixedPoints, bypass: &[Point], top_ns: f64) -> Result<Finding, ProbeError> {
        let (base, stride) = (self.base, self.stride);
        let attribute = self.info.details.get("l2_cache_bytes_attribute").and_then(|v| v.as_u64()).filter(|&b| b > 0);
        if let Some(bytes) = attribute {
            return Ok(Finding::integer(
                bytes,
                "bytes",
                "driver attribute (CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)",
                Confidence::High,
            )
            .with_note("the whole L2; what one SM's chase sees is l2.segment_capacity_bytes"));
        }
        let (l2_ns, dram_ns) = (fixed.l2_ns, fixed.dram_ns);
        let counted = l2_retained(&mut self.m, base, stride, self.max_bytes, bypass, l2_ns, top_ns, &fixed.dram_level)?;
        let l2_levels = Levels::new(l2_ns, dram_ns).with_floor_from(&fixed.l2);
        let first_slow = bypass.iter().position(|p| p.typical_ns > l2_ns * 1.1);
        match (counted, first_slow) {
            (Ok(c), _) => Ok(c),
            (Err(why), Some(i)) if i > 0 && l2_levels.separable() => {
                // Extra miss rate of a fitting footprint (beyond the floor of a tiny one).
                let fit_bytes = bypass[i - 1].bytes;
                let floor = l2_levels.misses_per_lap(&bypass[i - 1].timing, 1).0.max(0.0);
                let lo = fit_bytes / stride;
                let hi = bypass[i].bytes / stride;
                let steps = if self.quick { 3 } else { 5 };
                let (fit, miss) = bisect_capacity(
                    &mut self.m,
                    base,
                    stride,
                    CachePath::L1Bypass,
                    l2_levels,
                    lo,
                    hi,
                    floor + 3e-4,
                    steps,
                )?;
                Ok(Finding::integer(fit * stride, "bytes", "largest dense footprint with no L2 misses above the noise floor", Confidence::Low)
                    .with_note(&format!("a lower bound, resolution {} bytes: a virtual footprint fills a physically hashed cache's sets unevenly ({why})", (miss - fit) * stride)))
            }
            _ => Ok(Finding::undetermined(
                "bytes",
                "L1-bypassing sweep",
                "the L1-bypassing sweep never left the L2 level",
            )),
        }
    }
}

/// How an uninstrumented latency reading was taken, for its finding's method.
fn plain_method(r: &LatencyReading, what: &str) -> String {
    format!(
        "uninstrumented pointer chase on SM 0 ({what}): whole-chase time / hops, median of {} repetitions of {} and {} hops (in-kernel timers); a mean over every hop, slow ones included",
        r.sample.len(),
        r.hops,
        2 * r.hops
    )
}

/// The two sweeps as series (per-hop medians less the per-hop overhead), with their plateaus'
/// capacities as marks.
fn sweep_series(fixed: &FixedPoints, lv: &Levels3, cached: &[Point], bypass: &[Point], out: &mut ProbeOutput) {
    let series = |v: &[Point], d: &str, marks: Vec<f64>, ovh: f64| Series {
        description: d.into(),
        x_name: "footprint".into(),
        x_unit: "bytes".into(),
        y_name: "latency".into(),
        y_unit: "ns".into(),
        x: v.iter().map(|p| p.bytes as f64).collect(),
        y: v.iter().map(|p| p.typical_ns - ovh).collect(),
        y_spread: Some(v.iter().map(|p| p.timing.sample().map(|s| s.mad()).unwrap_or(0.0)).collect()),
        marks,
    };
    let (overhead, overhead_l1) = (fixed.overhead, fixed.overhead_l1);
    let cmarks = lv.cached.iter().filter_map(|p| p.capacity).collect();
    let bmarks = lv.bypass.iter().filter_map(|p| p.capacity).collect();
    out.series(
        "latency.l1_cached",
        series(
            cached,
            &format!("median ns per hop less the per-hop overhead ({overhead_l1:.2} ns), L1-cached loads, dense lines"),
            cmarks,
            overhead_l1,
        ),
    );
    out.series(
        "latency.l1_bypass",
        series(
            bypass,
            &format!("median ns per hop less the per-hop overhead ({overhead:.2} ns), L1-bypassing loads, dense lines"),
            bmarks,
            overhead,
        ),
    );
}
