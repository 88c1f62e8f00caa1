//! What CPUID reports (x86-64 only): frequencies (leaf 0x16 base/max, leaf 0x15 TSC/crystal,
//! the hypervisor's TSC leaf 0x40000010) and the deterministic cache parameters (Intel leaf 4,
//! AMD leaf 0x8000001D), decoded by pure functions so the decoding is tested on fixed register
//! values. Inside a VM every leaf is what the hypervisor chose to show.

use crate::sysinfo::OsCache;

/// Registers of one CPUID query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Regs {
    pub eax: u32,
    pub ebx: u32,
    pub ecx: u32,
    pub edx: u32,
}

#[cfg(target_arch = "x86_64")]
fn query(leaf: u32, sub: u32) -> Regs {
    // CPUID exists on every x86-64 CPU; unknown leaves return zeros or the highest basic leaf.
    let r = std::arch::x86_64::__cpuid_count(leaf, sub);
    Regs { eax: r.eax, ebx: r.ebx, ecx: r.ecx, edx: r.edx }
}

/// Leaf 0x16: (base, max) in Hz, each None when the field is 0.
pub fn decode_0x16(r: Regs) -> (Option<f64>, Option<f64>) {
    let mhz = |v: u32| ((v & 0xffff) > 0).then_some((v & 0xffff) as f64 * 1e6);
    (mhz(r.eax), mhz(r.ebx))
}

/// Leaf 0x15: TSC Hz = crystal Hz x EBX / EAX, when the crystal (ECX) is given.
pub fn decode_0x15(r: Regs) -> Option<f64> {
    (r.eax > 0 && r.ebx > 0 && r.ecx > 0).then(|| r.ecx as f64 * r.ebx as f64 / r.eax as f64)
}

/// One deterministic cache parameter leaf (4 or 0x8000001D, same layout); None for the end
/// marker (type 0).
pub fn decode_cache(r: Regs) -> Option<(OsCache, u32)> {
    let kind = match r.eax & 0x1f {
        1 => "Data",
        2 => "Instruction",
        3 => "Unified",
        _ => return None,
    };
    let level = (r.eax >> 5) & 0x7;
    let sharing = ((r.eax >> 14) & 0xfff) + 1;
    let ways = ((r.ebx >> 22) & 0x3ff) as u64 + 1;
    let parts = ((r.ebx >> 12) & 0x3ff) as u64 + 1;
    let line = (r.ebx & 0xfff) as u64 + 1;
    let sets = r.ecx as u64 + 1;
    let cache = OsCache {
        level,
        kind: kind.into(),
        size_bytes: ways * parts * line * sets,
        line_bytes: Some(line),
        shared_cpus: Some(sharing),
    };
    Some((cache, sharing))
}

/// Everything this module reads on the running CPU.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Report {
    pub vendor: Option<String>,
    pub base_hz: Option<f64>,
    pub max_hz: Option<f64>,
    pub tsc_hz: Option<f64>,
    pub hypervisor: bool,
    pub hypervisor_tsc_hz: Option<f64>,
    /// The leaf the caches came from ("4" or "0x8000001D") and the caches.
    pub cache_leaf: Option<&'static str>,
    pub caches: Vec<OsCache>,
}

/// Read CPUID (empty report off x86-64).
pub fn read() -> Report {
    #[cfg(target_arch = "x86_64")]
    {
        let mut rep = Report::default();
        let l0 = query(0, 0);
        let max = l0.eax;
        let mut v = Vec::with_capacity(12);
        for w in [l0.ebx, l0.edx, l0.ecx] {
            v.extend_from_slice(&w.to_le_bytes());
        }
        let vendor = String::from_utf8_lossy(&v).to_string();
        if max >= 0x16 {
            (rep.base_hz, rep.max_hz) = decode_0x16(query(0x16, 0));
        }
        if max >= 0x15 {
            rep.tsc_hz = decode_0x15(query(0x15, 0));
        }
        rep.hypervisor = max >= 1 && query(1, 0).ecx & (1 << 31) != 0;
        if rep.hypervisor && query(0x4000_0000, 0).eax >= 0x4000_0010 {
            let khz = query(0x4000_0010, 0).eax;
            rep.hypervisor_tsc_hz = (khz > 0).then_some(khz as f64 * 1e3);
        }
        let ext_max = query(0x8000_0000, 0).eax;
        let topoext = ext_max >= 0x8000_0001 && query(0x8000_0001, 0).ecx & (1 << 22) != 0;
        let leaf = if vendor == "GenuineIntel" && max >= 4 {
            Some((4u32, "4"))
        } else if topoext && ext_max >= 0x8000_001d {
            Some((0x8000_001d, "0x8000001D"))
        } else {
            None
        };
        if let Some((leaf, name)) = leaf {
            for sub in 0..16 {
                match decode_cache(query(leaf, sub)) {
                    Some((c, _)) => rep.caches.push(c),
                    None => break,
                }
            }
            rep.cache_leaf = (!rep.caches.is_empty()).then_some(name);
        }
        rep.vendor = Some(vendor);
        rep
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        Report::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_frequency_leaves() {
        // An Intel part with base 2100 MHz, max 3800 MHz (leaf 0x16), and a 25 MHz crystal with
        // TSC ratio 168/2 (leaf 0x15): 2.1 GHz.
        assert_eq!(decode_0x16(Regs { eax: 2100, ebx: 3800, ecx: 100, edx: 0 }), (Some(2.1e9), Some(3.8e9)));
        assert_eq!(decode_0x16(Regs::default()), (None, None));
        assert_eq!(decode_0x15(Regs { eax: 2, ebx: 168, ecx: 25_000_000, edx: 0 }), Some(2.1e9));
        assert_eq!(decode_0x15(Regs { eax: 2, ebx: 168, ecx: 0, edx: 0 }), None);
    }

    #[test]
    fn decodes_cache_leaves() {
        // L1d of 48 KiB: 12 ways, 1 partition, 64 B lines, 64 sets, shared by 2 threads.
        let l1 = Regs { eax: 1 | (1 << 5) | (1 << 14), ebx: (11 << 22) | 63, ecx: 63, edx: 0 };
        let (c, share) = decode_cache(l1).unwrap();
        assert_eq!((c.level, c.kind.as_str(), c.size_bytes, c.line_bytes, share), (1, "Data", 48 << 10, Some(64), 2));
        // Unified L3 of 32 MiB: 16 ways, 64 B, 32768 sets.
        let l3 = Regs { eax: 3 | (3 << 5) | (15 << 14), ebx: (15 << 22) | 63, ecx: 32767, edx: 0 };
        let (c, share) = decode_cache(l3).unwrap();
        assert_eq!((c.level, c.size_bytes, share), (3, 32 << 20, 16));
        assert!(decode_cache(Regs::default()).is_none());
    }

    #[test]
    fn reads_this_cpu_without_panicking() {
        let r = read();
        #[cfg(target_arch = "x86_64")]
        assert!(r.vendor.is_some());
        for c in &r.caches {
            assert!(c.size_bytes >= 1024, "{c:?}");
        }
    }
}
