//! What the operating system says about the host CPU (model name, cache sizes, huge-page
//! settings) and the core clock measured with a chain of dependent adds. Cache sizes from sysfs
//! only choose sweep ranges and are recorded as "OS-reported" details; findings never use them.

use std::time::Instant;

/// One cache as sysfs describes it (`/sys/devices/system/cpu/cpu0/cache/indexN`).
#[derive(Debug, Clone, PartialEq)]
pub struct OsCache {
    pub level: u32,
    /// "Data", "Instruction" or "Unified".
    pub kind: String,
    /// Size of one instance in bytes.
    pub size_bytes: u64,
    pub line_bytes: Option<u64>,
}

fn read_trim(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

/// Parse sizes such as "32K", "512K", "32768K", "1M", "1024".
pub fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let (num, mult) = match t.chars().last()? {
        'K' | 'k' => (&t[..t.len() - 1], 1024),
        'M' | 'm' => (&t[..t.len() - 1], 1024 * 1024),
        'G' | 'g' => (&t[..t.len() - 1], 1024 * 1024 * 1024),
        _ => (t, 1),
    };
    num.trim().parse::<u64>().ok().map(|v| v * mult)
}

/// The caches of cpu0 per sysfs (empty when sysfs does not say).
pub fn os_caches() -> Vec<OsCache> {
    let mut out = Vec::new();
    for i in 0..8 {
        let dir = format!("/sys/devices/system/cpu/cpu0/cache/index{i}");
        let (Some(level), Some(kind), Some(size)) =
            (read_trim(&format!("{dir}/level")), read_trim(&format!("{dir}/type")), read_trim(&format!("{dir}/size")))
        else {
            continue;
        };
        let (Ok(level), Some(size_bytes)) = (level.parse::<u32>(), parse_size(&size)) else { continue };
        let line_bytes = read_trim(&format!("{dir}/coherency_line_size")).and_then(|s| s.parse().ok());
        out.push(OsCache { level, kind, size_bytes, line_bytes });
    }
    out
}

/// Largest per-instance cache size the OS reports (the last-level cache), if any.
pub fn os_llc_bytes() -> Option<u64> {
    os_caches().iter().filter(|c| c.kind != "Instruction").map(|c| c.size_bytes).max()
}

/// Line size the OS reports for the L1 data cache (sweep spacing only).
pub fn os_line_bytes() -> Option<u64> {
    os_caches().iter().find(|c| c.level == 1 && c.kind != "Instruction").and_then(|c| c.line_bytes)
}

/// A field of the first processor block of /proc/cpuinfo.
pub fn cpuinfo_field(name: &str) -> Option<String> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == name).then(|| v.trim().to_string())
    })
}

/// The CPU model name ("AMD EPYC 7B13", "Intel(R) Xeon(R) Platinum 8480+").
pub fn model_name() -> String {
    cpuinfo_field("model name")
        .or_else(|| cpuinfo_field("Model"))
        .or_else(|| cpuinfo_field("Hardware"))
        .unwrap_or_else(|| format!("unknown {} CPU", std::env::consts::ARCH))
}

/// Logical CPUs online.
pub fn logical_cpus() -> u32 {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    if n > 0 {
        n as u32
    } else {
        std::thread::available_parallelism().map(|n| n.get() as u32).unwrap_or(1)
    }
}

/// The selected value of a sysfs choice file ("always [madvise] never" -> "madvise").
pub fn sysfs_choice(path: &str) -> Option<String> {
    let t = read_trim(path)?;
    match (t.find('['), t.find(']')) {
        (Some(a), Some(b)) if b > a => Some(t[a + 1..b].to_string()),
        _ => Some(t),
    }
}

/// Transparent huge page mode ("always", "madvise", "never"), if the kernel has THP.
pub fn thp_mode() -> Option<String> {
    sysfs_choice("/sys/kernel/mm/transparent_hugepage/enabled")
}

/// Free pre-reserved hugetlbfs pages (HugePages_Free of /proc/meminfo).
pub fn hugetlb_free_pages() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("HugePages_Free:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

/// Bytes of the mapping that starts at `base` backed by transparent huge pages (AnonHugePages
/// in /proc/self/smaps), when the kernel says.
pub fn anon_huge_bytes(base: u64) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/smaps").ok()?;
    let mut inside = false;
    for line in text.lines() {
        let first = line.split_whitespace().next().unwrap_or("");
        if let Some((a, b)) = first.split_once('-') {
            if let (Ok(a), Ok(b)) = (u64::from_str_radix(a, 16), u64::from_str_radix(b, 16)) {
                inside = a <= base && base < b;
                continue;
            }
        }
        if inside {
            if let Some(rest) = line.strip_prefix("AnonHugePages:") {
                return rest.split_whitespace().next().and_then(|v| v.parse::<u64>().ok()).map(|kb| kb * 1024);
            }
        }
    }
    None
}

/// Core clock in Hz measured as the rate of a chain of dependent integer adds (1 cycle each on
/// every x86-64 core); the best of several 5 ms tries. None off x86-64.
pub fn measure_clock_hz() -> Option<f64> {
    #[cfg(target_arch = "x86_64")]
    {
        let mut best: f64 = 0.0;
        for _ in 0..7 {
            let iters: u64 = 50_000;
            let t = Instant::now();
            let mut x: u64 = 0;
            let mut n = iters;
            // SAFETY: register-only arithmetic; no memory, no stack.
            unsafe {
                std::arch::asm!(
                    "2:",
                    ".rept 100",
                    "add {x}, 1",
                    ".endr",
                    "dec {n}",
                    "jnz 2b",
                    x = inout(reg) x,
                    n = inout(reg) n,
                    options(nomem, nostack),
                );
            }
            std::hint::black_box((x, n));
            let s = t.elapsed().as_secs_f64();
            if s > 0.0 {
                best = best.max(iters as f64 * 100.0 / s);
            }
        }
        (best > 1e8).then_some(best)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = Instant::now();
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sysfs_sizes() {
        assert_eq!(parse_size("32K"), Some(32 * 1024));
        assert_eq!(parse_size("32768K"), Some(32 * 1024 * 1024));
        assert_eq!(parse_size("1M"), Some(1024 * 1024));
        assert_eq!(parse_size("64"), Some(64));
        assert_eq!(parse_size("x"), None);
        assert_eq!(parse_size(""), None);
    }

    #[test]
    fn reads_this_machine() {
        assert!(!model_name().is_empty());
        assert!(logical_cpus() >= 1);
        #[cfg(target_arch = "x86_64")]
        {
            let hz = measure_clock_hz().expect("x86-64 clock");
            assert!((3e8..1e10).contains(&hz), "{hz}");
        }
    }
}
