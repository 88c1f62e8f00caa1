//! What the operating system says about the host CPU (model name, cache sizes from sysfs,
//! cpufreq frequencies, huge-page settings). The readers of sysfs take a root folder so that
//! fixture trees (crates/cpu/fixtures/) test them. Reported cache sizes choose sweep ranges and
//! sit beside the measured findings for comparison; findings never take their value from them.

use std::path::Path;

/// One cache as sysfs describes it (`/sys/devices/system/cpu/cpu0/cache/indexN`).
#[derive(Debug, Clone, PartialEq)]
pub struct OsCache {
    pub level: u32,
    /// "Data", "Instruction" or "Unified".
    pub kind: String,
    /// Size of one instance in bytes.
    pub size_bytes: u64,
    pub line_bytes: Option<u64>,
    /// Logical CPUs sharing one instance (sysfs shared_cpu_list; CPUID's "maximum" count).
    pub shared_cpus: Option<u32>,
}

fn read_trim(path: impl AsRef<Path>) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

/// Number of CPUs in a sysfs CPU list ("0-1", "0,2,4-7").
pub fn count_cpu_list(text: &str) -> Option<u32> {
    let mut n = 0u32;
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (a.trim().parse::<u32>().ok()?, b.trim().parse::<u32>().ok()?);
                n += b.checked_sub(a)? + 1;
            }
            None => {
                part.trim().parse::<u32>().ok()?;
                n += 1;
            }
        }
    }
    (n > 0).then_some(n)
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

/// The caches of `cpu` under a sysfs root ("/" on a live system; a fixture folder in tests):
/// ROOT/sys/devices/system/cpu/cpuN/cache/index*/. Empty when sysfs does not say.
pub fn os_caches_at(root: &Path, cpu: u32) -> Vec<OsCache> {
    let mut out = Vec::new();
    for i in 0..16 {
        let dir = root.join(format!("sys/devices/system/cpu/cpu{cpu}/cache/index{i}"));
        let (Some(level), Some(kind), Some(size)) =
            (read_trim(dir.join("level")), read_trim(dir.join("type")), read_trim(dir.join("size")))
        else {
            continue;
        };
        let (Ok(level), Some(size_bytes)) = (level.parse::<u32>(), parse_size(&size)) else { continue };
        let line_bytes = read_trim(dir.join("coherency_line_size")).and_then(|s| s.parse().ok());
        let shared_cpus = read_trim(dir.join("shared_cpu_list")).and_then(|s| count_cpu_list(&s));
        out.push(OsCache { level, kind, size_bytes, line_bytes, shared_cpus });
    }
    out
}

/// The caches of cpu0 per the live sysfs.
pub fn os_caches() -> Vec<OsCache> {
    os_caches_at(Path::new("/"), 0)
}

/// The data or unified cache of `level` in a list (L1 means L1d).
pub fn data_cache(caches: &[OsCache], level: u32) -> Option<&OsCache> {
    caches.iter().find(|c| c.level == level && c.kind != "Instruction")
}

/// cpufreq frequencies of `cpu` under a sysfs root, in Hz: (base_frequency, cpuinfo_max_freq,
/// cpuinfo_min_freq, scaling_cur_freq); each None when absent (VMs usually have no cpufreq).
pub fn cpufreq_at(root: &Path, cpu: u32) -> [Option<f64>; 4] {
    let dir = root.join(format!("sys/devices/system/cpu/cpu{cpu}/cpufreq"));
    let khz =
        |f: &str| read_trim(dir.join(f)).and_then(|s| s.parse::<f64>().ok()).filter(|v| *v > 0.0).map(|v| v * 1e3);
    [khz("base_frequency"), khz("cpuinfo_max_freq"), khz("cpuinfo_min_freq"), khz("scaling_cur_freq")]
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
    }

    #[test]
    fn counts_cpu_lists() {
        assert_eq!(count_cpu_list("0"), Some(1));
        assert_eq!(count_cpu_list("0-1\n"), Some(2));
        assert_eq!(count_cpu_list("0,2,4-7"), Some(6));
        assert_eq!(count_cpu_list("3-1"), None);
        assert_eq!(count_cpu_list("x"), None);
    }
}
