//! The measuring side shared by every discovery probe: one timed pointer chase (seed 000, appendix
//! "the latency chase") wrapped with chase counting, robust per-hop statistics and the
//! classification of hops into hits and misses. Measurement rules (docs/ADDING_A_PROBE.md): warm up, repeat,
//! report medians; where the target records per-hop times, a level's latency is the median hop
//! (outliers and refresh stalls only ever add time, so the median is their robust estimate), and a
//! count of misses uses a window around the slow level so that rare large outliers do not count.

use memscope_core::stats::Sample;
use memscope_core::{Buffer, CachePath, ChaseSpec, Finding, ProbeContext, ProbeError, Target, TargetInfo};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;

/// What one chase measured, reduced.
#[derive(Debug, Clone, PartialEq)]
pub struct Timing {
    /// Mean ns per hop of each repetition.
    pub means_ns: Vec<f64>,
    /// Per-hop ns of the last repetition, when the target records them.
    pub per_hop_ns: Option<Vec<f64>>,
}

impl Timing {
    /// The typical hop: the median per-hop time when recorded, else the median of the repetition
    /// means.
    pub fn typical_ns(&self) -> f64 {
        match &self.per_hop_ns {
            Some(h) if !h.is_empty() => memscope_core::stats::median(h),
            _ => memscope_core::stats::median(&self.means_ns),
        }
    }
    /// Median of the repetition means (every hop counts, outliers included).
    pub fn mean_ns(&self) -> f64 {
        memscope_core::stats::median(&self.means_ns)
    }
    /// Samples for a finding's spread: the per-hop times when recorded, else the means.
    pub fn sample(&self) -> Option<Sample> {
        match &self.per_hop_ns {
            Some(h) if !h.is_empty() => Sample::new(h).ok(),
            _ => Sample::new(&self.means_ns).ok(),
        }
    }
    /// Fraction of the recorded hops whose time lies in `[lo, hi]`.
    pub fn fraction_in(&self, lo: f64, hi: f64) -> Option<f64> {
        let h = self.per_hop_ns.as_ref().filter(|h| !h.is_empty())?;
        Some(h.iter().filter(|&&t| t >= lo && t <= hi).count() as f64 / h.len() as f64)
    }
}

/// Two latency levels of a chase (a hit and a miss of the level under study) and how to count the
/// misses of a chase between them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Levels {
    pub hit_ns: f64,
    pub miss_ns: f64,
    /// Fraction of hops of a chase that only hits which still land above the midpoint (outliers:
    /// interrupts, refresh, noise); subtracted when counting misses.
    pub floor: f64,
}

impl Levels {
    pub fn new(hit_ns: f64, miss_ns: f64) -> Self {
        Levels { hit_ns, miss_ns, floor: 0.0 }
    }
    /// The midpoint between the levels: a hop slower than this is a miss.
    pub fn mid(&self) -> f64 {
        0.5 * (self.hit_ns + self.miss_ns)
    }
    /// Whether the two levels are far enough apart to classify hops (at least 10% of the hit).
    pub fn separable(&self) -> bool {
        self.miss_ns - self.hit_ns > 0.1 * self.hit_ns.max(1.0)
    }
    /// Set the floor from a chase that only hits.
    pub fn with_floor_from(mut self, hits_only: &Timing) -> Self {
        self.floor = hits_only.fraction_in(self.mid(), f64::INFINITY).unwrap_or(0.0);
        self
    }
    /// Estimated number of missing lines per lap of a chase over `n` lines, and its noise (one
    /// standard deviation from the floor's binomial count): the fraction of hops slower than the
    /// midpoint, less the floor, times `n`; without per-hop times, the excess of the mean over the
    /// hit latency in units of the miss penalty.
    pub fn misses_per_lap(&self, t: &Timing, n: usize) -> (f64, f64) {
        let gap = self.miss_ns - self.hit_ns;
        match (t.fraction_in(self.mid(), f64::INFINITY), &t.per_hop_ns) {
            (Some(f), Some(h)) => {
                let hops = h.len() as f64;
                let sigma = (self.floor * (1.0 - self.floor) / hops).sqrt() * n as f64;
                ((f - self.floor) * n as f64, sigma)
            }
            _ => (((t.mean_ns() - self.hit_ns) / gap).max(0.0) * n as f64, 0.0),
        }
    }
}

/// Repetitions of each uninstrumented latency chase.
pub const LATENCY_REPEATS: u32 = 7;

/// The host clock's latency: (median time at the longer chase - median at the shorter) / extra
/// hops; None without host times.
fn host_slope(short: &[f64], long: &[f64], extra_hops: u64) -> Option<f64> {
    if short.is_empty() || long.is_empty() || extra_hops == 0 {
        return None;
    }
    let d = memscope_core::stats::median(long) - memscope_core::stats::median(short);
    Some(d / extra_hops as f64)
}

/// A level's latency from uninstrumented chases (`Meter::latency`).
#[derive(Debug, Clone, PartialEq)]
pub struct LatencyReading {
    /// Median of the repetition means, ns per hop.
    pub ns: f64,
    /// Median of the repetition means in the target's own cycles, where it counts them.
    pub cycles: Option<f64>,
    /// The repetition means behind `ns`.
    pub sample: Sample,
    /// The host clock's slope, ns per hop (the second opinion), where the target has one.
    pub host_ns: Option<f64>,
    /// Timed hops of the shorter chase.
    pub hops: u64,
}

impl LatencyReading {
    fn new(means: Vec<f64>, cycles: Vec<f64>, host_ns: Option<f64>, hops: u64) -> Result<Self, ProbeError> {
        let sample = Sample::new(&means).map_err(|e| ProbeError::Failed(format!("latency chase: {e}")))?;
        let cycles = (!cycles.is_empty()).then(|| memscope_core::stats::median(&cycles));
        Ok(LatencyReading { ns: sample.median(), cycles, sample, host_ns, hops })
    }

    /// The reading less a cost every hop paid besides the level's own (ns per hop; cycles at
    /// the clock where the target counts them).
    pub fn less_per_hop(mut self, ns: f64, clock_hz: Option<f64>) -> Self {
        if ns == 0.0 {
            return self;
        }
        let means: Vec<f64> = self.sample.sorted().iter().map(|v| v - ns).collect();
        if let Ok(s) = Sample::new(&means) {
            self.sample = s;
        }
        self.ns -= ns;
        if let (Some(c), Some(hz)) = (self.cycles.as_mut(), clock_hz) {
            *c -= ns * 1e-9 * hz;
        }
        self.host_ns = self.host_ns.map(|h| h - ns);
        self
    }

    /// The finding: the value with its spread, cycles (counted by the target where it counts
    /// them, else from the measured clock) and the host clock's second opinion.
    pub fn finding(&self, info: &TargetInfo, method: &str) -> Finding {
        let mut f =
            Finding::number(self.ns, "ns", method, memscope_core::Confidence::High).with_spread(self.sample.spread());
        match (self.cycles, info.clock_hz) {
            (Some(c), _) => f = f.with_cycles(c),
            (None, Some(hz)) => f = f.with_cycles(self.ns * 1e-9 * hz),
            _ => {}
        }
        if let Some(h) = self.host_ns {
            f = f.with_check(
                h,
                "host-side clock: launch time of a chase of 2n hops less that of n hops, over n",
                memscope_core::CHECK_TOLERANCE,
            );
        }
        f
    }
}

/// A target wrapped with counting and the session's chase parameters.
pub struct Meter<'a> {
    pub target: &'a mut dyn Target,
    pub info: TargetInfo,
    /// Timed chases so far.
    pub chases: u64,
    /// Hops so far (timed and warm-up).
    pub hops: u64,
    /// The SM (or core) every chase of this meter runs on (0 by default); None: wherever the
    /// target puts it.
    pub sm: Option<u32>,
    rng: ChaCha8Rng,
}

impl<'a> Meter<'a> {
    pub fn new(target: &'a mut dyn Target, seed: u64) -> Self {
        let info = target.info();
        // Every chase on SM (or core) 0 unless a probe says otherwise: run after run, the same
        // SM, the same distance to each L2 partition and to the translation hardware.
        let sm = (info.units > 0).then_some(0);
        Meter { target, info, chases: 0, hops: 0, sm, rng: ChaCha8Rng::seed_from_u64(seed) }
    }

    /// Whether the target records per-hop times.
    pub fn per_hop(&self) -> bool {
        self.info.per_hop_supported
    }

    /// The random generator of this session (seeded: runs are reproducible on the simulator).
    pub fn rng(&mut self) -> &mut ChaCha8Rng {
        &mut self.rng
    }

    /// A level's latency by seed 000's instrument: the whole-chase time over the hop count of an
    /// uninstrumented chase (no per-hop records inside the timed hops), `LATENCY_REPEATS`
    /// repetitions of `hops` hops and as many of `2 hops`; the value is the median of the
    /// repetition means (in-kernel timers). The second opinion is the host-side clock's slope
    /// (median launch time at `2 hops` less that at `hops`, over `hops`), where the target has
    /// one: launch overhead and warm-up cancel in the difference.
    pub fn latency(
        &mut self,
        addrs: &[u64],
        path: CachePath,
        hops: u64,
        warmup_laps: u32,
    ) -> Result<LatencyReading, ProbeError> {
        let hops = hops.max(1);
        let mut means = Vec::new();
        let mut cycles = Vec::new();
        let mut host = [Vec::new(), Vec::new()];
        for (k, h) in [hops, 2 * hops].into_iter().enumerate() {
            let mut spec = ChaseSpec::new(addrs.to_vec(), path, h);
            spec.warmup_laps = warmup_laps;
            spec.repeats = LATENCY_REPEATS;
            spec.per_hop = false;
            let r = self.run_plain(spec)?;
            means.extend(&r.ns_per_hop);
            cycles.extend(r.cycles_per_hop.unwrap_or_default());
            // The first repetition carries the warm-up laps: the host slope uses the others.
            host[k] = r.host_ns.map(|v| v.into_iter().skip(1).collect()).unwrap_or_default();
        }
        let slope = host_slope(&host[0], &host[1], hops);
        LatencyReading::new(means, cycles, slope, hops)
    }

    /// DRAM latency by the same instrument: `laps` cold laps over `addrs` after a flush each, no
    /// per-hop records; the value is the median lap mean. The second opinion is the host clock's
    /// slope between cold laps over the first half of `addrs` and over all of them.
    pub fn cold_latency(&mut self, addrs: &[u64], path: CachePath, laps: u32) -> Result<LatencyReading, ProbeError> {
        let half = (addrs.len() / 2).max(1);
        let mut means = Vec::new();
        let mut cycles = Vec::new();
        let mut host = [Vec::new(), Vec::new()];
        for _ in 0..laps.max(1) {
            for (k, part) in [&addrs[..half], addrs].into_iter().enumerate() {
                self.target.flush()?;
                let mut spec = ChaseSpec::new(part.to_vec(), path, part.len() as u64);
                spec.warmup_laps = 0;
                spec.repeats = 1;
                spec.per_hop = false;
                let r = self.run_plain(spec)?;
                if k == 1 {
                    means.extend(&r.ns_per_hop);
                    cycles.extend(r.cycles_per_hop.unwrap_or_default());
                }
                host[k].extend(r.host_ns.unwrap_or_default());
            }
        }
        let extra = (addrs.len() - half) as u64;
        let slope = if extra > 0 { host_slope(&host[0], &host[1], extra) } else { None };
        LatencyReading::new(means, cycles, slope, addrs.len() as u64)
    }

    /// Run a spec exactly as given (no per-hop records added), counting it.
    fn run_plain(&mut self, mut spec: ChaseSpec) -> Result<memscope_core::ChaseResult, ProbeError> {
        spec.sm = spec.sm.or(self.sm);
        self.chases += 1;
        self.hops += spec.hops * u64::from(spec.repeats) + spec.addrs.len() as u64 * u64::from(spec.warmup_laps);
        let r = self.target.chase(&spec)?;
        if r.ns_per_hop.is_empty() {
            return Err(ProbeError::Failed("chase returned no timing".into()));
        }
        Ok(r)
    }

    /// Run one chase: `addrs` in the given order as one cycle, `laps` timed laps (at least
    /// `min_hops` hops), `warmup_laps` untimed laps first.
    pub fn chase(
        &mut self,
        addrs: &[u64],
        path: CachePath,
        laps: u64,
        min_hops: u64,
        warmup_laps: u32,
    ) -> Result<Timing, ProbeError> {
        let hops = (addrs.len() as u64 * laps).max(min_hops).max(1);
        let mut spec = ChaseSpec::new(addrs.to_vec(), path, hops);
        spec.warmup_laps = warmup_laps;
        self.run(spec)
    }

    /// Run a prepared chase spec (per-hop recording and repeats are chosen here).
    pub fn run(&mut self, mut spec: ChaseSpec) -> Result<Timing, ProbeError> {
        spec.sm = spec.sm.or(self.sm);
        if self.per_hop() {
            spec.per_hop = true;
            spec.repeats = 1;
        } else {
            spec.repeats = spec.repeats.max(3);
        }
        self.chases += 1;
        self.hops += spec.hops * u64::from(spec.repeats) + spec.addrs.len() as u64 * u64::from(spec.warmup_laps);
        let r = self.target.chase(&spec)?;
        if r.ns_per_hop.is_empty() {
            return Err(ProbeError::Failed("chase returned no timing".into()));
        }
        Ok(Timing { means_ns: r.ns_per_hop, per_hop_ns: r.per_hop_ns })
    }

    /// One cold lap: flush, then visit every address once (no warm-up).
    pub fn cold_lap(&mut self, addrs: &[u64], path: CachePath) -> Result<Timing, ProbeError> {
        self.target.flush()?;
        let mut spec = ChaseSpec::new(addrs.to_vec(), path, addrs.len() as u64);
        spec.warmup_laps = 0;
        spec.sm = self.sm;
        if self.per_hop() {
            spec.per_hop = true;
        }
        spec.repeats = 1;
        self.chases += 1;
        self.hops += spec.hops;
        let r = self.target.chase(&spec)?;
        Ok(Timing { means_ns: r.ns_per_hop, per_hop_ns: r.per_hop_ns })
    }

    /// Shuffle a list in place with the session's generator.
    pub fn shuffle(&mut self, v: &mut [u64]) {
        v.shuffle(&mut self.rng);
    }

    /// Allocate, turning target errors into probe errors.
    pub fn alloc(&mut self, bytes: u64) -> Result<Buffer, ProbeError> {
        Ok(self.target.alloc(bytes)?)
    }

    /// Allocate the largest window of `2^bits` bytes aligned to `2^bits` that the target grants,
    /// trying `max_bits` down to `min_bits`. Returns the buffer and the window's base and bits.
    pub fn aligned_window(&mut self, max_bits: u32, min_bits: u32) -> Result<(Buffer, u64, u32), ProbeError> {
        let mut last = None;
        for bits in (min_bits..=max_bits).rev() {
            match self.target.alloc(2u64 << bits) {
                Ok(buf) => {
                    let align = 1u64 << bits;
                    let base = buf.base.div_ceil(align) * align;
                    return Ok((buf, base, bits));
                }
                Err(e) => last = Some(e),
            }
        }
        Err(ProbeError::Failed(format!(
            "could not allocate an aligned window of 2^{min_bits} bytes: {}",
            last.map(|e| e.to_string()).unwrap_or_default()
        )))
    }
}

/// Lines a cache retains, counted from one SM with per-hop times: after a flush, one fill lap over
/// `lines` in the given order, then one lap in the reverse order. Under LRU, FIFO or RRIP insertion
/// a set keeps the last lines the fill lap brought it, and the reverse lap meets them before any
/// line the set dropped, so the reverse lap hits min(load, ways) lines per set: every way of every
/// set once each set is overfilled. A hop counts as a hit when its time lies below `threshold_ns`
/// in at least one of the runs (outliers only add time); runs repeat (at least 2, at most
/// `max_runs`) until one changes no hop's class. The fill laps are the control: every hop of a
/// fill lap after a flush misses, so the share of them below the threshold is the rate at which a
/// miss passes for a hit (0 on the simulator; DRAM with a wide spread on real GPUs), and the count
/// is corrected for it. `None` without per-hop times.
pub fn count_retained(
    m: &mut Meter<'_>,
    lines: &[u64],
    path: CachePath,
    threshold_ns: f64,
    max_runs: u32,
) -> Result<Option<Retained>, ProbeError> {
    if !m.per_hop() || lines.is_empty() {
        return Ok(None);
    }
    let reverse: Vec<u64> = lines.iter().rev().copied().collect();
    let mut hit = vec![false; lines.len()];
    let mut runs = 0;
    let mut false_hits = 0.0f64;
    loop {
        let fill = m.cold_lap(lines, path)?;
        false_hits = false_hits.max(fill.fraction_in(f64::NEG_INFINITY, threshold_ns).unwrap_or(0.0));
        let t = m.chase(&reverse, path, 1, 0, 0)?;
        let Some(h) = t.per_hop_ns.filter(|h| h.len() == lines.len()) else { return Ok(None) };
        let mut changed = 0;
        for (c, &ns) in hit.iter_mut().zip(&h) {
            if !*c && ns < threshold_ns {
                *c = true;
                changed += 1;
            }
        }
        runs += 1;
        if runs >= max_runs.max(2) || (runs >= 2 && changed == 0) {
            break;
        }
    }
    let raw = hit.iter().filter(|&&c| c).count() as u64;
    let n = lines.len() as f64;
    // A miss counts as a hit when any run is fast: 1 - (1 - f)^runs.
    let p = 1.0 - (1.0 - false_hits).powi(runs as i32);
    let hits = if p > 0.0 && p < 1.0 { ((raw as f64 - n * p) / (1.0 - p)).round().clamp(0.0, n) as u64 } else { raw };
    Ok(Some(Retained { hits, raw_hits: raw, runs, false_hit_fraction: false_hits }))
}

/// What `count_retained` found.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Retained {
    /// Lines retained (corrected for misses that pass for hits).
    pub hits: u64,
    /// Hops classified as hits, before the correction.
    pub raw_hits: u64,
    /// Runs taken.
    pub runs: u32,
    /// Largest share of a fill lap's hops (all misses) below the threshold.
    pub false_hit_fraction: f64,
}

/// Read an earlier finding as u64.
pub fn earlier_u64(earlier: &BTreeMap<String, Finding>, key: &str) -> Option<u64> {
    earlier.get(key).and_then(|f| f.value.as_u64())
}

/// Read an earlier finding as f64.
pub fn earlier_f64(earlier: &BTreeMap<String, Finding>, key: &str) -> Option<f64> {
    earlier.get(key).and_then(|f| f.value.as_f64())
}

/// A numeric latency finding with spread and cycles.
pub fn latency_finding(t: &Timing, value_ns: f64, info: &TargetInfo, method: &str) -> Finding {
    let mut f = Finding::number(value_ns, "ns", method, memscope_core::Confidence::High);
    if let Some(s) = t.sample() {
        f = f.with_spread(s.spread());
    }
    if let Some(hz) = info.clock_hz {
        f = f.with_cycles(value_ns * 1e-9 * hz);
    }
    f
}

/// Waive reasons shared by the GPU-style probes: a target without `gpu_hierarchy` (the host CPU)
/// has its own probes; `need_bypass` asks for a real L1-bypassing path as well.
pub fn gpu_applicability(info: &TargetInfo, need_bypass: bool) -> memscope_core::Applicability {
    use memscope_core::Applicability;
    if !info.gpu_hierarchy {
        return Applicability::Waived("the CPU has its own cpu.* probes".into());
    }
    if need_bypass && !info.bypass_supported {
        return Applicability::Waived("needs an L1-bypassing load path (ld.global.cg)".into());
    }
    Applicability::Applicable
}

/// Context helpers.
pub fn meter<'a>(ctx: &'a mut ProbeContext<'_>, seed: u64) -> Meter<'a> {
    Meter::new(&mut *ctx.target, seed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generic_probes_apply_by_capability() {
        use memscope_core::{Applicability, Target};
        let mut info = crate::testsim::ToyCache::new(2, 16, 64, vec![0x40, 0x80, 0x100, 0x200]).info();
        assert_eq!(gpu_applicability(&info, true), Applicability::Applicable);
        info.bypass_supported = false;
        assert_eq!(gpu_applicability(&info, false), Applicability::Applicable);
        assert!(matches!(gpu_applicability(&info, true), Applicability::Waived(w) if w.contains("bypass")));
        info.gpu_hierarchy = false;
        assert!(matches!(gpu_applicability(&info, false), Applicability::Waived(w) if w.contains("cpu.*")));
    }

    #[test]
    fn misses_per_lap_less_the_floor() {
        let lv = Levels { hit_ns: 15.0, miss_ns: 127.0, floor: 0.02 };
        // 100 hops of a 10-line chase: 20 misses, 2 huge outliers on hits, the rest hits.
        let mut h = vec![15.0; 78];
        h.extend(vec![127.0; 20]);
        h.extend(vec![900.0; 2]);
        let t = Timing { means_ns: vec![0.0], per_hop_ns: Some(h) };
        let (m, sigma) = lv.misses_per_lap(&t, 10);
        assert!((m - 2.0).abs() < 1e-9);
        assert!((sigma - (0.02f64 * 0.98 / 100.0).sqrt() * 10.0).abs() < 1e-12);
        // Without per-hop times: the mean excess.
        let t = Timing { means_ns: vec![15.0 + 0.2 * 112.0], per_hop_ns: None };
        assert!((lv.misses_per_lap(&t, 10).0 - 2.0).abs() < 1e-9);
        assert!(lv.separable());
        assert!(!Levels::new(100.0, 105.0).separable());
    }

    #[test]
    fn reverse_lap_counts_every_way_of_every_set() {
        // 16 sets x 4 ways of 64-byte lines (XOR index over bits 6..9 and 10..13), LRU.
        let masks: Vec<u64> = (0..4).map(|b| (1u64 << (6 + b)) | (1u64 << (10 + b))).collect();
        let mut t = crate::testsim::ToyCache::new(4, 16, 64, masks);
        let mut m = Meter::new(&mut t, 1);
        let lines: Vec<u64> = (0..16 * 4 * 3).map(|k| (1u64 << 30) + 64 * k).collect();
        let r = count_retained(&mut m, &lines, CachePath::L1Cached, 67.5, 4).unwrap().unwrap();
        assert_eq!((r.hits, r.raw_hits, r.runs, r.false_hit_fraction), (64, 64, 2, 0.0));
        // An underfilled cache: every line is retained.
        let r = count_retained(&mut m, &lines[..32], CachePath::L1Cached, 67.5, 4).unwrap().unwrap();
        assert_eq!(r.hits, 32);
    }
}
