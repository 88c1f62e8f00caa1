//! `SimTarget`: the simulated hierarchy behind the `Target` trait (docs/ARCHITECTURE.md), so every discovery
//! algorithm runs unchanged on a hierarchy with known ground truth. Buffers get page-aligned,
//! distinct virtual ranges backed by physical pages from a seeded allocator (virtual != physical
//! above the page offset); `alloc_aliased` maps one set of physical pages twice (seed 000
//! footnotes 3 and 6). A chase hops through `Machine::load` (seed 000 appendix "latency chase").

mod chain;

use crate::hierarchy::{Hierarchy, NoiseSpec};
use crate::machine::{Level, Machine, PageParts, Pre, Staged, Stats};
use crate::tlb::SplitMix;
use memscope_core::{Buffer, CachePath, ChaseResult, ChaseSpec, Target, TargetError, TargetInfo};
use std::any::Any;
use std::path::Path;

#[derive(Debug, Clone)]
struct Mapping {
    buf: Buffer,
    pages: Vec<u64>,
    /// Id of the other half of an aliased pair (which owns the physical pages).
    alias_of: Option<u64>,
}

/// A simulated GPU memory hierarchy as a `Target`.
pub struct SimTarget {
    pub(crate) m: Machine,
    id: String,
    maps: Vec<Mapping>,
    next_va: u64,
    next_id: u64,
    now_ns: f64,
    pub(crate) noise: SplitMix,
    work: ChaseWork,
    /// Scratch memory of chases, kept between them (speed only): page parts, a batch of `Pre`, a
    /// chase's table of them, the staged passes' flags.
    parts: Option<PageParts>,
    pub(crate) pre_batch: Vec<Pre>,
    pre_table: Vec<Pre>,
    pub(crate) staged: Staged,
    /// The simulated host's links (docs/INTERCONNECT.md), when the hierarchy has a `links` section.
    links: Option<crate::links::SimLinks>,
}

/// What the chases on a target cost the host (the simulator's speed on a real workload, e.g. a
/// whole discovery run; docs/PERFORMANCE.md).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ChaseWork {
    /// `chase` calls.
    pub chases: u64,
    /// Loads simulated by them (warm-up hops included): line accesses.
    pub hops: u64,
    /// CPU time of the calling thread inside `chase` (checks of the address list included), s.
    pub cpu_s: f64,
}

/// CPU time of the calling thread, s (wall time where the platform has no thread clock).
pub fn thread_cpu_s() -> f64 {
    #[cfg(target_os = "linux")]
    {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: clock_gettime writes into the timespec we pass.
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
    }
    #[cfg(not(target_os = "linux"))]
    {
        use std::sync::OnceLock;
        static T0: OnceLock<std::time::Instant> = OnceLock::new();
        T0.get_or_init(std::time::Instant::now).elapsed().as_secs_f64()
    }
}

fn config_err(e: impl std::fmt::Display) -> TargetError {
    TargetError::InvalidConfig(format!("invalid simulated hierarchy: {e}"))
}

impl SimTarget {
    /// A target simulating `h` (validated first; the error names the offending field), within
    /// the default host-memory budget (`budget::DEFAULT_BUDGET_BYTES`).
    pub fn new(h: Hierarchy) -> Result<Self, TargetError> {
        Self::with_budget(h, crate::budget::DEFAULT_BUDGET_BYTES)
    }

    /// `new` with a host-memory budget: a hierarchy whose estimated state exceeds it is refused
    /// (`InvalidConfig`, with the estimate) before anything is allocated.
    pub fn with_budget(h: Hierarchy, budget_bytes: u64) -> Result<Self, TargetError> {
        h.validate().map_err(config_err)?;
        crate::budget::check(&h, budget_bytes).map_err(TargetError::InvalidConfig)?;
        let id = format!("sim:{}", h.name);
        let next_va = 1u64 << (h.address_bits - 1);
        let noise = SplitMix(h.noise.seed);
        let links = h.links.clone().map(|l| crate::links::SimLinks::new(l, h.noise.seed));
        Ok(SimTarget {
            links,
            m: Machine::new(h),
            id,
            maps: Vec::new(),
            next_va,
            next_id: 1,
            now_ns: 0.0,
            noise,
            work: ChaseWork::default(),
            parts: None,
            pre_batch: Vec::new(),
            pre_table: Vec::new(),
            staged: Staged::default(),
        })
    }

    /// A built-in preset (`presets()`).
    pub fn from_preset(name: &str) -> Result<Self, TargetError> {
        let h = crate::presets::preset(name).ok_or_else(|| {
            TargetError::Unsupported(format!(
                "no simulator preset {name:?} (presets: {})",
                crate::presets::PRESETS.join(", ")
            ))
        })?;
        let mut t = Self::new(h)?;
        t.id = format!("sim:{name}");
        Ok(t)
    }

    /// A hierarchy JSON file (the format of docs/CONTRACTS.md); errors name the offending field.
    pub fn from_json_file(path: &Path) -> Result<Self, TargetError> {
        let text = read_limited(path)
            .map_err(|e| TargetError::InvalidConfig(format!("cannot read {}: {e}", path.display())))?;
        let h = Hierarchy::from_json_str(&text).map_err(config_err)?;
        let mut t = Self::new(h)?;
        t.id = format!("sim:{}", path.display());
        Ok(t)
    }

    /// The hierarchy simulated (ground truth for tests).
    pub fn hierarchy(&self) -> &Hierarchy {
        &self.m.h
    }
    /// The machine state (counters, direct loads and stores).
    pub fn machine(&mut self) -> &mut Machine {
        &mut self.m
    }
    /// Counters since construction (or `machine().reset_stats()`).
    pub fn stats(&self) -> &Stats {
        &self.m.stats
    }
    /// Simulated time so far, ns.
    pub fn now_ns(&self) -> f64 {
        self.now_ns
    }
    /// Move simulated time forward (after a replay driven through `machine()`).
    pub fn advance(&mut self, ns: f64) {
        self.now_ns += ns.max(0.0);
    }
    /// Physical address behind a virtual one (what seed 000 reads from the page tables).
    pub fn physical_address(&self, va: u64) -> Option<u64> {
        self.m.pt.translate(va)
    }

    fn map_pages(&mut self, bytes: u64, pages: &[u64], alias_of: Option<u64>) -> Buffer {
        let shift = self.m.pt.page_shift();
        let base = self.next_va;
        for (i, &p) in pages.iter().enumerate() {
            self.m.pt.map((base >> shift) + i as u64, p);
        }
        // distinct ranges with a one-page hole between buffers
        self.next_va = base + ((pages.len() as u64 + 1) << shift);
        let buf = Buffer { id: self.next_id, base, bytes };
        self.next_id += 1;
        self.maps.push(Mapping { buf, pages: pages.to_vec(), alias_of });
        buf
    }

    fn take_pages(&mut self, bytes: u64) -> Result<Vec<u64>, TargetError> {
        if bytes == 0 {
            return Err(TargetError::BadSpec("allocation of 0 bytes".into()));
        }
        let page = 1u64 << self.m.pt.page_shift();
        let n = bytes.div_ceil(page);
        let free = self.m.pt.free_pages();
        self.m.pt.take(n).ok_or(TargetError::OutOfMemory { asked_bytes: n * page, free_bytes: free * page })
    }

    /// Allocate `bytes` backed by physically contiguous pages starting at physical address
    /// `phys_base` (page-aligned), for experiments that need a known physical layout (seed 000:
    /// "a contiguous 72 MiB").
    pub fn alloc_contiguous(&mut self, bytes: u64, phys_base: u64) -> Result<Buffer, TargetError> {
        let shift = self.m.pt.page_shift();
        if phys_base & ((1 << shift) - 1) != 0 || bytes == 0 {
            return Err(TargetError::BadSpec(format!("phys_base {phys_base:#x} is not page-aligned (or 0 bytes)")));
        }
        let n = bytes.div_ceil(1 << shift);
        let pages = self.m.pt.take_contiguous(phys_base >> shift, n).ok_or_else(|| {
            TargetError::BadSpec(format!("physical range {phys_base:#x} + {bytes} bytes is not free"))
        })?;
        Ok(self.map_pages(bytes, &pages, None))
    }

    fn mapping_of(&self, addr: u64) -> Option<&Mapping> {
        // buffers are few; mappings are kept in base order
        let i = self.maps.partition_point(|m| m.buf.base <= addr);
        if i == 0 {
            return None;
        }
        let m = &self.maps[i - 1];
        m.buf.contains(addr).then_some(m)
    }

    /// Checks a chase: (SM, chains, lowest address, highest address).
    fn check(&self, spec: &ChaseSpec) -> Result<(u32, usize, u64, u64), TargetError> {
        if spec.addrs.is_empty() {
            return Err(TargetError::BadSpec("no addresses".into()));
        }
        let w = spec.warps.max(1) as usize;
        if w > spec.addrs.len() {
            return Err(TargetError::BadSpec(format!("{} addresses for {w} chains", spec.addrs.len())));
        }
        if w > 1024 {
            return Err(TargetError::BadSpec(format!("warps = {w}: at most 1024")));
        }
        let sm = spec.sm.unwrap_or(0);
        if sm >= self.m.h.sm.count {
            return Err(TargetError::BadSpec(format!("sm {sm}: this simulated GPU has {} SMs", self.m.h.sm.count)));
        }
        // One pass for the range, the alignment and the spacing (every address differs from the
        // lowest by a multiple of 2^k exactly when it differs from the first one by such a
        // multiple): a plain reduction the compiler vectorizes.
        let a0 = spec.addrs[0];
        let (lo, hi, diffs, odd) = range_bits(&spec.addrs);
        if odd % 8 != 0 {
            let (i, a) = spec.addrs.iter().enumerate().find(|(_, a)| *a % 8 != 0).unwrap_or((0, &a0));
            return Err(TargetError::BadSpec(format!("addrs[{i}] = {a:#x} is not 8-byte aligned")));
        }
        // Buffers are contiguous ranges: when the lowest and the highest address lie in one, all
        // do; otherwise each address is looked up (consecutive ones mostly share a buffer).
        if !self.mapping_of(lo).is_some_and(|m| m.buf.contains(hi)) {
            let mut last: Option<&Buffer> = None;
            for (i, &a) in spec.addrs.iter().enumerate() {
                if last.is_some_and(|b| b.contains(a)) {
                    continue;
                }
                last = self.mapping_of(a).map(|m| &m.buf);
                if last.is_none() {
                    return Err(TargetError::BadSpec(format!("addrs[{i}] = {a:#x} is not inside a live buffer")));
                }
            }
        }
        if !has_duplicates_bitmap(&spec.addrs, lo, hi, diffs.trailing_zeros().min(63)).unwrap_or(true) {
            return Ok((sm, w, lo, hi));
        }
        // a duplicate (or a sparse list): sort, and name the smallest repeated address
        let mut sorted = spec.addrs.clone();
        sorted.sort_unstable();
        if let Some(d) = sorted.windows(2).find(|p| p[0] == p[1]) {
            return Err(TargetError::BadSpec(format!("address {:#x} appears twice", d[0])));
        }
        Ok((sm, w, lo, hi))
    }

    /// A load of `p.va` (indices computed ahead: `Machine::pre`) as a chase hop: its latency
    /// with the configured noise, and its level.
    #[inline(always)]
    pub(crate) fn hop_pre(&mut self, sm: u32, p: &Pre, bypass: bool, t: f64, noise: bool) -> (f64, Level) {
        let (ns, level) = self.m.hop_pre(sm, p, bypass, t);
        (if noise { noisy(&self.m.h.noise, &mut self.noise, ns) } else { ns.max(0.0) }, level)
    }
}

/// `ns` with the noise of `n` added (drawn from `rng`), never below 0.
#[inline]
pub(crate) fn noisy(n: &NoiseSpec, rng: &mut SplitMix, mut ns: f64) -> f64 {
    if n.jitter_ns > 0.0 {
        // Box-Muller normal
        let u1 = rng.unit().max(1e-300);
        let u2 = rng.unit();
        ns += n.jitter_ns * (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
    }
    if n.outlier_fraction > 0.0 && rng.unit() < n.outlier_fraction {
        ns += n.outlier_ns * (1.0 - rng.unit());
    }
    ns.max(0.0)
}

/// Largest chase whose `Pre`s are tabled (40 bytes each).
const TABLE_MAX: usize = 1 << 21;

/// (lowest, highest, OR of the differences from the first, OR of all) of non-empty `addrs`, four
/// independent lanes at a time (u64 minima have no SSE2 instruction; four lanes keep the
/// compare-and-select chains apart).
fn range_bits(addrs: &[u64]) -> (u64, u64, u64, u64) {
    let a0 = addrs[0];
    let (mut lo, mut hi, mut diffs, mut odd) = ([a0; 4], [a0; 4], [0u64; 4], [0u64; 4]);
    let chunks = addrs.chunks_exact(4);
    let rest = chunks.remainder();
    for c in chunks {
        for k in 0..4 {
            lo[k] = lo[k].min(c[k]);
            hi[k] = hi[k].max(c[k]);
            diffs[k] |= c[k].wrapping_sub(a0);
            odd[k] |= c[k];
        }
    }
    for &a in rest {
        (lo[0], hi[0], diffs[0], odd[0]) = (lo[0].min(a), hi[0].max(a), diffs[0] | a.wrapping_sub(a0), odd[0] | a);
    }
    let or = |v: [u64; 4]| v[0] | v[1] | v[2] | v[3];
    (lo.into_iter().fold(a0, u64::min), hi.into_iter().fold(a0, u64::max), or(diffs), or(odd))
}

/// Whether 8-byte-aligned `addrs`, from `lo` to `hi`, repeat an address, by a bitmap over their
/// range (a long chase list sorts slowly); `None` when the range is too sparse for a bitmap. All
/// offsets from `lo` are multiples of 2^`shift` (a chase over lines: one bit per line).
fn has_duplicates_bitmap(addrs: &[u64], lo: u64, hi: u64, shift: u32) -> Option<bool> {
    let words = ((hi - lo) >> shift) / 64 + 1;
    if words > 4 * addrs.len() as u64 + 1024 {
        return None;
    }
    let mut seen = vec![0u64; words as usize];
    // (the bitmap is read at random: the word of the address 16 ahead is prefetched on the host)
    const AHEAD: usize = 16;
    for (k, &a) in addrs.iter().enumerate() {
        #[cfg(target_arch = "x86_64")]
        if let Some(&b) = addrs.get(k + AHEAD) {
            let j = (b.wrapping_sub(lo) >> shift) as usize / 64;
            // SAFETY: a prefetch is a hint that never faults; SSE is baseline on x86_64.
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                    seen.as_ptr().wrapping_add(j) as *const i8
                )
            };
        }
        let i = ((a - lo) >> shift) as usize;
        let bit = 1u64 << (i % 64);
        if seen[i / 64] & bit != 0 {
            return Some(true);
        }
        seen[i / 64] |= bit;
    }
    Some(false)
}

impl Target for SimTarget {
    fn info(&self) -> TargetInfo {
        let h = &self.m.h;
        let mut details = serde_json::Map::new();
        details.insert("hierarchy".into(), serde_json::to_value(h).unwrap_or_default());
        if let Some(b) = h.l2.driver_reported_bytes {
            details.insert("l2_cache_bytes_attribute".into(), b.into());
        }
        if let Some(l) = &h.links {
            // (the peer probe's applicability reads these; the CUDA target sets the same two)
            details.insert("host_gpus".into(), serde_json::json!(l.gpus));
            details.insert("host_gpu_index".into(), serde_json::json!(l.index));
        }
        TargetInfo {
            kind: "sim".into(),
            id: self.id.clone(),
            name: h.name.clone(),
            clock_hz: Some(h.clock_hz),
            bypass_supported: true,
            aliasing_supported: true,
            per_hop_supported: true,
            gpu_hierarchy: true,
            units: h.sm.count,
            capabilities: memscope_core::Capabilities::simulated_gpu(),
            details,
        }
    }

    fn alloc(&mut self, bytes: u64) -> Result<Buffer, TargetError> {
        let pages = self.take_pages(bytes)?;
        Ok(self.map_pages(bytes, &pages, None))
    }

    fn alloc_aliased(&mut self, bytes: u64) -> Result<(Buffer, Buffer), TargetError> {
        let pages = self.take_pages(bytes)?;
        let a = self.map_pages(bytes, &pages, None);
        let b = self.map_pages(bytes, &pages, Some(a.id));
        Ok((a, b))
    }

    fn free(&mut self, buf: Buffer) {
        let Some(i) = self.maps.iter().position(|m| m.buf.id == buf.id) else { return };
        // free both halves of an aliased pair
        let partner =
            self.maps[i].alias_of.or_else(|| self.maps.iter().find(|m| m.alias_of == Some(buf.id)).map(|m| m.buf.id));
        let ids: Vec<u64> = std::iter::once(buf.id).chain(partner).collect();
        let shift = self.m.pt.page_shift();
        let mut give = Vec::new();
        for id in ids {
            if let Some(j) = self.maps.iter().position(|m| m.buf.id == id) {
                let m = self.maps.remove(j);
                for k in 0..m.pages.len() as u64 {
                    let vpn = (m.buf.base >> shift) + k;
                    self.m.pt.unmap(vpn);
                    self.m.invalidate_page(vpn);
                }
                if m.alias_of.is_none() {
                    give = m.pages;
                }
            }
        }
        self.m.pt.give_back(&give);
    }

    fn flush(&mut self) -> Result<(), TargetError> {
        self.m.flush();
        Ok(())
    }

    fn chase(&mut self, spec: &ChaseSpec) -> Result<ChaseResult, TargetError> {
        let c0 = thread_cpu_s();
        let r = self.chase_timed(spec);
        self.work.chases += 1;
        self.work.cpu_s += thread_cpu_s() - c0;
        r
    }

    fn peer_links(&mut self) -> Option<&mut dyn memscope_core::links::PeerLinks> {
        self.links.as_mut().map(|l| l as &mut dyn memscope_core::links::PeerLinks)
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

impl SimTarget {
    /// The host cost of the chases so far.
    pub fn chase_work(&self) -> ChaseWork {
        self.work
    }

    fn chase_timed(&mut self, spec: &ChaseSpec) -> Result<ChaseResult, TargetError> {
        let (sm, w, lo, hi) = self.check(spec)?;
        // (one chain: its indices by page halves where the hierarchy allows)
        let mut parts = if w == 1 { self.m.page_parts(self.parts.take(), spec.addrs.len(), lo, hi) } else { None };
        let bypass = spec.path == CachePath::L1Bypass;
        // one chain walks the address list itself (no copy)
        let owned: Vec<Vec<u64>> = if w > 1 {
            (0..w).map(|j| spec.addrs.iter().skip(j).step_by(w).copied().collect()).collect()
        } else {
            Vec::new()
        };
        let chains: Vec<&[u64]> = if w > 1 { owned.iter().map(Vec::as_slice).collect() } else { vec![&spec.addrs[..]] };
        // One chain that visits its addresses twice or more (warm-up and repeats together)
        // computes each address's `Pre` once, up front (up to TABLE_MAX addresses).
        let total = spec.addrs.len() as u64 * spec.warmup_laps as u64 + spec.hops.max(1) * spec.repeats.max(1) as u64;
        let n = spec.addrs.len();
        // (empty: not tabled; the memory is kept from chase to chase)
        let mut table: Vec<Pre> = std::mem::take(&mut self.pre_table);
        table.clear();
        if w == 1 && total >= 2 * n as u64 && n <= TABLE_MAX {
            table.resize(n, Pre::default());
            match &mut parts {
                Some(pp) => self.m.pre_split_into(pp, &spec.addrs, &mut table, 8, !bypass),
                None => table.iter_mut().zip(&spec.addrs).for_each(|(t, &a)| *t = self.m.pre_with(a, 8, !bypass)),
            }
        }
        let mut pos = vec![0usize; w];
        let mut clock = vec![self.now_ns; w];
        // warm-up laps: every chain walks its whole cycle, interleaved in time
        let warm_hops: Vec<u64> = chains.iter().map(|c| c.len() as u64 * spec.warmup_laps as u64).collect();
        let mut sums = vec![0.0; w];
        // The host-side clock of a launch: from its start (warm-up laps in the first repetition's
        // launch) to the last chain's end, plus the instrument's launch cost.
        let latest = |c: &[f64]| c.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let mut launch_start = latest(&clock);
        self.run_chains(sm, bypass, &chains, &table, &mut parts, &mut pos, &mut clock, &mut sums, &warm_hops, None);
        let mut res = ChaseResult {
            ns_per_hop: Vec::new(),
            cycles_per_hop: Some(Vec::new()),
            per_hop_ns: None,
            host_ns: Some(Vec::new()),
        };
        let hops = spec.hops.max(1);
        let record_ns = self.m.h.noise.per_hop_record_ns;
        for r in 0..spec.repeats.max(1) {
            sums.fill(0.0);
            let mut rec = (spec.per_hop && r + 1 == spec.repeats.max(1)).then(Vec::new);
            self.run_chains(
                sm,
                bypass,
                &chains,
                &table,
                &mut parts,
                &mut pos,
                &mut clock,
                &mut sums,
                &vec![hops; w],
                rec.as_mut(),
            );
            let mut mean = sums.iter().map(|s| s / hops as f64).sum::<f64>() / w as f64;
            // The instrument: recording each hop's time costs every recorded hop `record_ns`
            // (timers read inside the timed hops).
            let recorded = rec.is_some();
            if let Some(v) = rec.as_mut().filter(|_| record_ns > 0.0) {
                v.iter_mut().for_each(|x| *x += record_ns);
            }
            if recorded {
                mean += record_ns;
            }
            res.ns_per_hop.push(mean);
            if let Some(c) = res.cycles_per_hop.as_mut() {
                c.push(mean * self.m.h.clock_hz * 1e-9);
            }
            if recorded {
                res.per_hop_ns = rec;
            }
            let end = latest(&clock) + if recorded { record_ns * hops as f64 } else { 0.0 };
            if let Some(h) = res.host_ns.as_mut() {
                h.push(end - launch_start + self.m.h.noise.launch_ns);
            }
            launch_start = latest(&clock);
        }
        self.now_ns = clock.iter().cloned().fold(self.now_ns, f64::max);
        self.parts = parts;
        self.pre_table = table;
        Ok(res)
    }
}

impl SimTarget {
    /// Advance chains: chain j does `hops[j]` dependent loads; with several chains the next hop
    /// is always the one of the chain whose clock is earliest (they run concurrently).
    #[allow(clippy::too_many_arguments)]
    fn run_chains(
        &mut self,
        sm: u32,
        bypass: bool,
        chains: &[&[u64]],
        table: &[Pre],
        parts: &mut Option<PageParts>,
        pos: &mut [usize],
        clock: &mut [f64],
        sums: &mut [f64],
        hops: &[u64],
        rec: Option<&mut Vec<f64>>,
    ) {
        self.work.hops += hops.iter().sum::<u64>();
        if chains.len() == 1 {
            // (the accelerated route: the same hops as the loop below, batched; `chain::chase_chain`)
            let (pos, clock, sum) = (&mut pos[0], &mut clock[0], &mut sums[0]);
            chain::chase_chain(self, sm, bypass, chains[0], table, parts, pos, clock, sum, hops[0], rec);
            return;
        }
        let noise = self.m.h.noise.jitter_ns > 0.0 || self.m.h.noise.outlier_fraction > 0.0;
        let mut left: Vec<u64> = hops.to_vec();
        // per-hop times are reported chain-major (every hop of chain 0, then chain 1, ...), as
        // the CUDA target reports them
        let mut per_chain: Vec<Vec<f64>> = if rec.is_some() { vec![Vec::new(); chains.len()] } else { Vec::new() };
        loop {
            let mut best: Option<usize> = None;
            for j in 0..chains.len() {
                if left[j] > 0 && best.is_none_or(|b| clock[j] < clock[b]) {
                    best = Some(j);
                }
            }
            let Some(j) = best else { break };
            let p = self.m.pre_with(chains[j][pos[j]], 8, !bypass);
            let (ns, _) = self.hop_pre(sm, &p, bypass, clock[j], noise);
            clock[j] += ns;
            sums[j] += ns;
            if let Some(v) = per_chain.get_mut(j) {
                v.push(ns);
            }
            pos[j] = (pos[j] + 1) % chains[j].len();
            left[j] -= 1;
        }
        if let Some(r) = rec {
            r.extend(per_chain.into_iter().flatten());
        }
    }
}

/// A hierarchy file's text, read no further than one byte past `MAX_HIERARCHY_BYTES` (the parser
/// refuses what is longer).
pub fn read_limited(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut text = String::new();
    std::fs::File::open(path)?.take(crate::hierarchy::MAX_HIERARCHY_BYTES as u64 + 1).read_to_string(&mut text)?;
    Ok(text)
}
