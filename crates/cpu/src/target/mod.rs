//! The host CPU as a `memscope_core::Target` (seed 000 appendix, "the latency chase", done on the
//! host): buffers are anonymous mmaps aligned to 2 MiB (hugetlbfs pages when reserved, else
//! transparent huge pages through madvise), a chase writes each address's next pointer and then
//! times dependent loads with `Instant` over many hops, per-hop times come from `rdtscp`.

use crate::{clock, cpuid, sysinfo};
use memscope_core::{Buffer, ChaseResult, ChaseSpec, Target, TargetError, TargetInfo};
use std::time::Instant;

const HUGE_BYTES: u64 = 2 << 20;

/// How a buffer's pages came to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageKind {
    /// Pre-reserved 2 MiB hugetlbfs pages (MAP_HUGETLB).
    Hugetlb,
    /// Ordinary mapping with madvise(MADV_HUGEPAGE); the kernel may or may not back it with THP.
    Madvised,
}

struct Mapping {
    buf: Buffer,
    /// Start and length of the whole mmap (for munmap).
    map_addr: usize,
    map_len: usize,
    kind: PageKind,
    /// Bytes backed by huge pages when known (hugetlb: all; THP: AnonHugePages).
    huge_bytes: Option<u64>,
    /// One bit per 8-byte word, reused across chases to reject duplicate addresses.
    seen: Vec<u64>,
}

/// The host CPU target. One thread chases; the thread is pinned to the core it runs on (or
/// `ChaseSpec::sm`) for the duration of each chase so a migration cannot empty its caches.
pub struct CpuTarget {
    maps: Vec<Mapping>,
    next_id: u64,
    flush_buf: Option<(usize, usize)>,
    clock: Option<clock::Measured>,
    tsc_hz: Option<f64>,
    cpuid: cpuid::Report,
    name: String,
    units: u32,
}

// SAFETY: the raw mappings are owned by the target and only touched through `&mut self`.
unsafe impl Send for CpuTarget {}

impl CpuTarget {
    pub fn new() -> Result<CpuTarget, TargetError> {
        let tsc_hz = tsc::calibrate();
        let cpuid = cpuid::read();
        let sources = clock::host_sources(tsc_hz, &cpuid);
        // Below the reported range usually means a busy shared host: measure again, up to 5 times.
        let low = |hz: f64| clock::cross_check(hz, &sources).verdict == clock::Verdict::BelowRange;
        Ok(CpuTarget {
            maps: Vec::new(),
            next_id: 1,
            flush_buf: None,
            clock: clock::measure_settled(low, 5),
            tsc_hz,
            cpuid,
            name: sysinfo::model_name(),
            units: sysinfo::logical_cpus(),
        })
    }

    /// Bytes of `buf` backed by huge pages, when the kernel says (for probes' method notes).
    pub fn huge_bytes(&self, buf: &Buffer) -> Option<u64> {
        self.maps.iter().find(|m| m.buf.id == buf.id).and_then(|m| m.huge_bytes)
    }

    /// A text for method notes: "2 MiB pages: 128 of 128 MiB (THP)".
    pub fn page_note(&self, buf: &Buffer) -> String {
        match self.maps.iter().find(|m| m.buf.id == buf.id) {
            Some(m) => match (m.kind, m.huge_bytes) {
                (PageKind::Hugetlb, _) => "2 MiB hugetlbfs pages".into(),
                (PageKind::Madvised, Some(h)) => {
                    format!("THP: {} of {} MiB on 2 MiB pages", h >> 20, m.map_len >> 20)
                }
                (PageKind::Madvised, None) => "THP status unknown".into(),
            },
            None => "unknown buffer".into(),
        }
    }

    fn find_map(&mut self, addr: u64) -> Option<usize> {
        self.maps.iter().position(|m| m.buf.contains(addr))
    }

    fn map_anonymous(len: usize, huge: bool) -> Option<usize> {
        let mut flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS;
        if huge {
            flags |= libc::MAP_HUGETLB;
        }
        // SAFETY: anonymous mapping, no fd; the result is checked.
        let p = unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, flags, -1, 0) };
        (p != libc::MAP_FAILED).then_some(p as usize)
    }
}

impl Drop for CpuTarget {
    fn drop(&mut self) {
        for m in self.maps.drain(..) {
            // SAFETY: unmapping what we mapped.
            unsafe { libc::munmap(m.map_addr as *mut libc::c_void, m.map_len) };
        }
        if let Some((a, l)) = self.flush_buf.take() {
            // SAFETY: as above.
            unsafe { libc::munmap(a as *mut libc::c_void, l) };
        }
    }
}

/// Touch one byte per 4 KiB so the pages exist before any timing.
fn touch(addr: usize, len: usize) {
    let mut off = 0;
    while off < len {
        // SAFETY: inside a fresh read-write mapping of `len` bytes.
        unsafe { std::ptr::write_volatile((addr + off) as *mut u8, 0) };
        off += 4096;
    }
}

impl Target for CpuTarget {
    fn info(&self) -> TargetInfo {
        let mut d = serde_json::Map::new();
        d.insert("arch".into(), std::env::consts::ARCH.into());
        if let Some(v) = sysinfo::cpuinfo_field("vendor_id") {
            d.insert("vendor".into(), v.into());
        }
        if let Some(v) = sysinfo::cpuinfo_field("cpu MHz").and_then(|v| v.parse::<f64>().ok()) {
            d.insert("cpuinfo_mhz".into(), v.into());
        }
        d.insert(
            "clock_method".into(),
            match &self.clock {
                Some(m) => format!("measured: {}", m.method).into(),
                None => "unknown: no clock instrument on this architecture".into(),
            },
        );
        d.insert("clock".into(), self.clock_details());
        if let Some(t) = self.tsc_hz {
            d.insert("tsc_hz".into(), t.into());
        }
        d.insert("thp_mode".into(), sysinfo::thp_mode().unwrap_or_else(|| "absent".into()).into());
        d.insert("hugetlb_free_pages".into(), sysinfo::hugetlb_free_pages().into());
        let total: u64 = self.maps.iter().map(|m| m.map_len as u64).sum();
        let huge: u64 = self.maps.iter().filter_map(|m| m.huge_bytes).sum();
        if total > 0 {
            d.insert("mapped_bytes".into(), total.into());
            d.insert("huge_page_bytes".into(), huge.into());
            d.insert("huge_pages_obtained".into(), (huge > 0).into());
        } else {
            // Probe once with a small mapping so results record whether huge pages are available.
            let len = (4 * HUGE_BYTES) as usize;
            let got = CpuTarget::map_anonymous(len, false).map(|p| {
                let a = (p + HUGE_BYTES as usize - 1) & !(HUGE_BYTES as usize - 1);
                // SAFETY: advice and touches stay inside our fresh mapping.
                unsafe { libc::madvise(a as *mut libc::c_void, 2 * HUGE_BYTES as usize, libc::MADV_HUGEPAGE) };
                touch(a, 2 * HUGE_BYTES as usize);
                let h = sysinfo::anon_huge_bytes(a as u64);
                // SAFETY: unmapping what we mapped.
                unsafe { libc::munmap(p as *mut libc::c_void, len) };
                h
            });
            let hugetlb = sysinfo::hugetlb_free_pages() > 0;
            d.insert("huge_pages_obtained".into(), (hugetlb || got.flatten().unwrap_or(0) > 0).into());
            d.insert("huge_pages_check".into(), "4 MiB test mapping at startup".into());
        }
        let list = |v: &[sysinfo::OsCache]| -> Vec<serde_json::Value> {
            v.iter()
                .map(|c| serde_json::json!({"level": c.level, "type": c.kind, "size_bytes": c.size_bytes, "shared_cpus": c.shared_cpus}))
                .collect()
        };
        d.insert(
            "os_reported_caches".into(),
            serde_json::json!({
                "note": "sysfs of cpu0, per instance; sizes sweeps and is compared with the measured findings, never used as one",
                "caches": list(&sysinfo::os_caches()),
                "cpuid_leaf": self.cpuid.cache_leaf,
                "cpuid_caches": list(&self.cpuid.caches),
            }),
        );
        d.insert("hypervisor".into(), self.cpuid.hypervisor.into());
        TargetInfo {
            kind: "cpu".into(),
            id: "cpu".into(),
            name: self.name.clone(),
            clock_hz: self.cycle_clock_hz(),
            bypass_supported: false,
            aliasing_supported: false,
            per_hop_supported: self.tsc_hz.is_some(),
            gpu_hierarchy: false,
            units: self.units,
            capabilities: memscope_core::Capabilities::host_cpu(),
            details: d,
        }
    }

    fn alloc(&mut self, bytes: u64) -> Result<Buffer, TargetError> {
        if bytes == 0 {
            return Err(TargetError::BadSpec("cannot allocate 0 bytes".into()));
        }
        let len = bytes.div_ceil(HUGE_BYTES) * HUGE_BYTES;
        if sysinfo::hugetlb_free_pages() * HUGE_BYTES >= len {
            if let Some(p) = CpuTarget::map_anonymous(len as usize, true) {
                touch(p, len as usize);
                return self.register(p, bytes, p, len as usize, PageKind::Hugetlb, Some(len));
            }
        }
        self.alloc_thp(bytes, len)
    }

    fn free(&mut self, buf: Buffer) {
        if let Some(i) = self.maps.iter().position(|m| m.buf.id == buf.id) {
            let m = self.maps.remove(i);
            // SAFETY: unmapping what we mapped.
            unsafe { libc::munmap(m.map_addr as *mut libc::c_void, m.map_len) };
        }
    }

    fn flush(&mut self) -> Result<(), TargetError> {
        // clflush every line of every buffer (x86-64), then read a buffer twice the size of the
        // largest cache (at least 64 MiB) so other lines and TLB entries are evicted too.
        #[cfg(target_arch = "x86_64")]
        for m in &self.maps {
            let mut a = m.map_addr;
            while a < m.map_addr + m.map_len {
                // SAFETY: inside our mapping; clflush has no other precondition.
                unsafe { std::arch::x86_64::_mm_clflush(a as *const u8) };
                a += 64;
            }
        }
        if self.flush_buf.is_none() {
            let want = (2 * sysinfo::os_llc_bytes().unwrap_or(64 << 20)).clamp(64 << 20, 1 << 30) as usize;
            let p = CpuTarget::map_anonymous(want, false)
                .ok_or(TargetError::OutOfMemory { asked_bytes: want as u64, free_bytes: 0 })?;
            let mut off = 0;
            while off < want {
                // SAFETY: inside the fresh mapping.
                unsafe { std::ptr::write_volatile((p + off) as *mut u64, off as u64) };
                off += 64;
            }
            self.flush_buf = Some((p, want));
        }
        let (p, len) = self.flush_buf.expect("set above");
        let mut acc = 0u64;
        let mut off = 0;
        while off < len {
            // SAFETY: inside the flush mapping.
            acc = acc.wrapping_add(unsafe { std::ptr::read_volatile((p + off) as *const u64) });
            off += 64;
        }
        std::hint::black_box(acc);
        Ok(())
    }

    fn chase(&mut self, spec: &ChaseSpec) -> Result<ChaseResult, TargetError> {
        let n = spec.addrs.len();
        let w = spec.warps.max(1) as usize;
        if n == 0 || spec.hops == 0 || spec.repeats == 0 {
            return Err(TargetError::BadSpec("need addresses, hops > 0 and repeats > 0".into()));
        }
        if w > n || w > chase::MAX_CHAINS {
            return Err(TargetError::BadSpec(format!("{w} chains over {n} addresses (at most {})", chase::MAX_CHAINS)));
        }
        self.validate(&spec.addrs)?;
        // Write the next pointers: chain c holds addrs[c], addrs[c + w], ... as one cycle.
        let mut heads = Vec::with_capacity(w);
        for c in 0..w {
            let chain: Vec<u64> = spec.addrs.iter().skip(c).step_by(w).copied().collect();
            for (k, &a) in chain.iter().enumerate() {
                let next = chain[(k + 1) % chain.len()];
                // SAFETY: validated: 8-byte aligned, inside a live mapping, no word twice.
                unsafe { std::ptr::write_volatile(a as *mut u64, next) };
            }
            heads.push(chain[0]);
        }
        let chain_len = n.div_ceil(w) as u64;
        let _pin = affinity::Pin::to(spec.sm);
        let warm = chain_len * spec.warmup_laps as u64;
        if warm > 0 {
            chase::walk(&mut heads, warm);
        }
        let mut ns = Vec::with_capacity(spec.repeats as usize);
        for _ in 0..spec.repeats {
            let t = Instant::now();
            chase::walk(&mut heads, spec.hops);
            ns.push(t.elapsed().as_nanos() as f64 / spec.hops as f64);
        }
        let per_hop_ns = match (spec.per_hop, self.tsc_hz) {
            (true, Some(hz)) => Some(tsc::per_hop(heads[0], spec.hops.min(1 << 20), hz)),
            _ => None,
        };
        Ok(ChaseResult { ns_per_hop: ns, cycles_per_hop: None, per_hop_ns, host_ns: None })
    }

    fn as_any_mut(&mut self) -> &mut dyn std::any::Any {
        self
    }
}

/// Pin the calling thread to the CPU it runs on until the returned guard drops (the old mask is
/// restored then); nothing happens where the OS does not allow it.
pub(crate) fn pin_to_current_cpu() -> impl Drop {
    affinity::Pin::to(None)
}

impl CpuTarget {
    /// Measure the clock again (as at startup) and keep the result; returns the cycle clock.
    /// The latency probe calls it right after its sweep: a turbo clock moves with the load of
    /// the host (3.65-4.09 GHz on the shared dev VM within minutes).
    pub fn remeasure_clock(&mut self) -> Option<f64> {
        let sources = clock::host_sources(self.tsc_hz, &self.cpuid);
        let low = |hz: f64| clock::cross_check(hz, &sources).verdict == clock::Verdict::BelowRange;
        if let Some(m) = clock::measure_settled(low, 3) {
            self.clock = Some(m);
        }
        self.cycle_clock_hz()
    }

    /// The clock cycles are counted in: the measured one, unless it lies above every reported
    /// frequency's turbo range (then the instrument is not trusted and cycles are left out).
    pub fn cycle_clock_hz(&self) -> Option<f64> {
        let m = self.clock.as_ref()?;
        let c = clock::cross_check(m.hz, &clock::host_sources(self.tsc_hz, &self.cpuid));
        (c.verdict != clock::Verdict::AboveRange).then_some(m.hz)
    }

    /// The clock, its instruments and the cross-check against every reported frequency.
    fn clock_details(&self) -> serde_json::Value {
        let sources = clock::host_sources(self.tsc_hz, &self.cpuid);
        let named: serde_json::Map<String, serde_json::Value> =
            sources.named().into_iter().map(|(k, v)| (k.to_string(), v.into())).collect();
        let Some(m) = &self.clock else {
            return serde_json::json!({"measured_hz": null, "sources_hz": named});
        };
        let c = clock::cross_check(m.hz, &sources);
        let rel: serde_json::Map<String, serde_json::Value> =
            c.relative.iter().map(|(k, v)| (k.to_string(), (*v).into())).collect();
        serde_json::json!({
            "measured_hz": m.hz,
            "method": m.method,
            "primary_median_hz": m.primary.median_ops_per_s * m.primary_cycles,
            "witness_method": m.witness_method,
            "witness_hz": m.witness_hz(),
            "witness_note": clock::witness_note(m),
            "sources_hz": named,
            "check": {
                "verdict": c.verdict.as_str(),
                "nominal_source": c.nominal.map(|n| n.0),
                "nominal_hz": c.nominal.map(|n| n.1),
                "range_hz": c.range_hz,
                "top_source": c.top_source.unwrap_or("none reported: twice the nominal"),
                "measured_over_source_minus_1": rel,
            },
        })
    }

    fn alloc_thp(&mut self, bytes: u64, len: u64) -> Result<Buffer, TargetError> {
        let map_len = (len + HUGE_BYTES) as usize;
        let p = CpuTarget::map_anonymous(map_len, false)
            .ok_or(TargetError::OutOfMemory { asked_bytes: bytes, free_bytes: 0 })?;
        let base = (p + HUGE_BYTES as usize - 1) & !(HUGE_BYTES as usize - 1);
        // SAFETY: advice on a range inside our mapping; failure only means no THP.
        unsafe { libc::madvise(base as *mut libc::c_void, len as usize, libc::MADV_HUGEPAGE) };
        touch(base, len as usize);
        let huge = sysinfo::anon_huge_bytes(base as u64);
        self.register(base, bytes, p, map_len, PageKind::Madvised, huge)
    }

    fn register(
        &mut self,
        base: usize,
        bytes: u64,
        map_addr: usize,
        map_len: usize,
        kind: PageKind,
        huge_bytes: Option<u64>,
    ) -> Result<Buffer, TargetError> {
        let buf = Buffer { id: self.next_id, base: base as u64, bytes };
        self.next_id += 1;
        self.maps.push(Mapping { buf, map_addr, map_len, kind, huge_bytes, seen: Vec::new() });
        Ok(buf)
    }

    /// Every address 8-byte aligned, inside a live buffer, and no 8-byte word twice.
    fn validate(&mut self, addrs: &[u64]) -> Result<(), TargetError> {
        let mut touched: Vec<usize> = Vec::new();
        let mut result = Ok(());
        for &a in addrs {
            if a % 8 != 0 {
                result = Err(TargetError::BadSpec(format!("address {a:#x} is not 8-byte aligned")));
                break;
            }
            let Some(i) = self.find_map(a) else {
                result = Err(TargetError::BadSpec(format!("address {a:#x} is in no allocated buffer")));
                break;
            };
            let m = &mut self.maps[i];
            if m.seen.is_empty() {
                m.seen = vec![0u64; (m.buf.bytes as usize / 8).div_ceil(64)];
            }
            if !touched.contains(&i) {
                touched.push(i);
            }
            let word = ((a - m.buf.base) / 8) as usize;
            let (q, r) = (word / 64, word % 64);
            if m.seen[q] & (1 << r) != 0 {
                result = Err(TargetError::BadSpec(format!("address {a:#x} appears twice")));
                break;
            }
            m.seen[q] |= 1 << r;
        }
        for i in touched {
            self.maps[i].seen.iter_mut().for_each(|v| *v = 0);
        }
        result
    }
}

mod chase {
    /// Most interleaved chains one thread chases.
    pub const MAX_CHAINS: usize = 64;

    /// Follow every chain `hops` times, interleaved, leaving the heads where they stopped.
    pub fn walk(heads: &mut [u64], hops: u64) {
        if heads.len() == 1 {
            let mut p = heads[0] as *const u64;
            let mut h = hops;
            // SAFETY: every pointer in the cycle was written by `chase` into a live mapping.
            unsafe {
                while h >= 8 {
                    for _ in 0..8 {
                        p = std::ptr::read_volatile(p) as *const u64;
                    }
                    h -= 8;
                }
                while h > 0 {
                    p = std::ptr::read_volatile(p) as *const u64;
                    h -= 1;
                }
            }
            heads[0] = std::hint::black_box(p) as u64;
            return;
        }
        let mut ps = [0u64; MAX_CHAINS];
        let k = heads.len();
        ps[..k].copy_from_slice(heads);
        for _ in 0..hops {
            for p in ps[..k].iter_mut() {
                // SAFETY: as above.
                *p = unsafe { std::ptr::read_volatile(*p as *const u64) };
            }
        }
        heads.copy_from_slice(std::hint::black_box(&ps[..k]));
    }
}

/// The TSC calibration, for the clock's tests.
#[cfg(test)]
pub(crate) fn tsc_calibrate_for_tests() -> Option<f64> {
    tsc::calibrate()
}

mod tsc {
    //! Time-stamp counter: calibration against `Instant` and per-hop timing with `rdtscp`
    //! (which waits for earlier loads to complete). x86-64 only.

    /// TSC ticks per second, measured over 20 ms; None off x86-64 or without a usable TSC.
    pub fn calibrate() -> Option<f64> {
        #[cfg(target_arch = "x86_64")]
        {
            let has_invariant = std::fs::read_to_string("/proc/cpuinfo")
                .map(|t| t.contains("constant_tsc") && t.contains("rdtscp"))
                .unwrap_or(false);
            if !has_invariant {
                return None;
            }
            let t = std::time::Instant::now();
            // SAFETY: rdtsc has no preconditions on x86-64.
            let a = unsafe { std::arch::x86_64::_rdtsc() };
            while t.elapsed().as_millis() < 20 {}
            let b = unsafe { std::arch::x86_64::_rdtsc() };
            let s = t.elapsed().as_secs_f64();
            Some((b - a) as f64 / s)
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            None
        }
    }

    /// Nanoseconds of each of `hops` hops from `head`, minus the cost of reading the counter.
    #[cfg(target_arch = "x86_64")]
    pub fn per_hop(head: u64, hops: u64, hz: f64) -> Vec<f64> {
        use std::arch::x86_64::__rdtscp;
        let mut aux = 0u32;
        // Cost of back-to-back counter reads (the floor to subtract).
        let mut floor = u64::MAX;
        for _ in 0..1000 {
            // SAFETY: rdtscp has no preconditions on x86-64.
            let (a, b) = unsafe { (__rdtscp(&mut aux), __rdtscp(&mut aux)) };
            floor = floor.min(b.wrapping_sub(a));
        }
        let mut out = Vec::with_capacity(hops as usize);
        let mut p = head as *const u64;
        // SAFETY: the cycle was written by `chase`.
        let mut prev = unsafe { __rdtscp(&mut aux) };
        for _ in 0..hops {
            p = unsafe { std::ptr::read_volatile(p) } as *const u64;
            // rdtscp waits until earlier instructions (the load) have executed.
            let now = unsafe { __rdtscp(&mut aux) };
            out.push(now.saturating_sub(prev).saturating_sub(floor) as f64 * 1e9 / hz);
            prev = now;
        }
        std::hint::black_box(p);
        out
    }

    #[cfg(not(target_arch = "x86_64"))]
    pub fn per_hop(_head: u64, _hops: u64, _hz: f64) -> Vec<f64> {
        Vec::new()
    }
}

mod affinity {
    //! Pin the calling thread to one CPU for the duration of a chase.

    pub struct Pin {
        old: Option<libc::cpu_set_t>,
    }

    impl Pin {
        /// Pin to `core` when given, else to the CPU the thread runs on now.
        pub fn to(core: Option<u32>) -> Pin {
            // SAFETY: plain libc calls on the calling thread with properly sized sets.
            unsafe {
                let mut old: libc::cpu_set_t = std::mem::zeroed();
                if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut old) != 0 {
                    return Pin { old: None };
                }
                let cpu = match core {
                    Some(c) => c as usize,
                    None => match libc::sched_getcpu() {
                        c if c >= 0 => c as usize,
                        _ => return Pin { old: None },
                    },
                };
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                libc::CPU_SET(cpu, &mut set);
                if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                    return Pin { old: None };
                }
                Pin { old: Some(old) }
            }
        }
    }

    impl Drop for Pin {
        fn drop(&mut self) {
            if let Some(old) = self.old.take() {
                // SAFETY: restoring the mask read in `to`.
                unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &old) };
            }
        }
    }
}

#[cfg(test)]
mod tests;
