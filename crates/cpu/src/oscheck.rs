//! The measured cache capacities beside what the OS reports (sysfs, else CPUID leaf 4 /
//! 0x8000001D): pure comparison, the text for the finding's note, and a flag with the likely
//! reasons when the two differ by more than [`TOLERANCE`].

use crate::sysinfo::OsCache;
use memscope_core::keys;
use memscope_core::{Confidence, Finding, ProbeOutput};

/// Measured and reported sizes may differ by this fraction before the finding says so.
pub const TOLERANCE: f64 = 0.25;

/// What is known about the host that explains a disagreement.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Host {
    /// CPUID says a hypervisor is present.
    pub hypervisor: bool,
    /// "GenuineIntel", "AuthenticAMD", ...
    pub vendor: Option<String>,
    /// Logical CPUs this OS sees.
    pub logical_cpus: u32,
}

/// One level's comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    pub reported_bytes: u64,
    /// Where the reported size came from ("sysfs index3").
    pub source: String,
    /// measured / reported.
    pub ratio: f64,
    /// |ratio - 1| > TOLERANCE.
    pub flagged: bool,
    /// One sentence for the finding's note.
    pub text: String,
}

fn mib(b: f64) -> String {
    if b >= 1048576.0 {
        format!("{:.3} MiB", b / 1048576.0)
    } else {
        format!("{:.1} KiB", b / 1024.0)
    }
}

/// Likely reasons, most likely first, for measured/reported = `ratio` on `level` (1, 2, 3).
pub fn reasons(level: u32, ratio: f64, rep: &OsCache, host: &Host) -> Vec<String> {
    let mut r = Vec::new();
    let amd = host.vendor.as_deref() == Some("AuthenticAMD");
    if ratio < 1.0 {
        if level >= 3 && host.hypervisor {
            r.push(format!(
                "a VM sees a share of the host's L3: the reported size is the whole cache{}, which other guests and the host also fill",
                rep.shared_cpus.map(|s| format!(" (shared by {s} CPUs as reported)")).unwrap_or_default()
            ));
        }
        if level >= 3 && rep.size_bytes >= 64 << 20 {
            r.push("the L3 is split into slices or sub-NUMA clusters, and a core reaches the far part at a latency the chase counts as the next level".into());
        }
        if level >= 2 {
            r.push("guest pages are 4 KiB on the host (EPT) or randomly placed, so set conflicts in the physically indexed cache and TLB misses start before the capacity".into());
        }
        if level == 1 {
            r.push("code, stack and page-table lines share the L1d, so the chase's lines start missing before the capacity".into());
        }
    } else {
        if level >= 2 && (amd || level == 3) {
            r.push("a non-inclusive (victim) next level holds lines this level evicted, so the chase sees this level plus part of the next before latency rises".into());
        }
        if level == 2 {
            r.push("the step to the L3 is small or gradual, and the capacity estimate (half-way point of the transition) lies inside the L3's range".into());
        }
        r.push("the hardware prefetchers or an adaptive replacement policy keep more than a capacity's worth of a random cycle hitting".into());
    }
    r
}

/// Compare a measured capacity with the reported cache of `level` (None when the OS reports none).
pub fn compare(level: u32, measured_bytes: f64, reported: Option<(&OsCache, &str)>, host: &Host) -> Option<Comparison> {
    let (rep, source) = reported?;
    if rep.size_bytes == 0 || measured_bytes.is_nan() || measured_bytes <= 0.0 {
        return None;
    }
    let ratio = measured_bytes / rep.size_bytes as f64;
    let flagged = (ratio - 1.0).abs() > TOLERANCE;
    let mut text = format!("OS reports {} ({source}); measured/reported {:.2}", mib(rep.size_bytes as f64), ratio);
    if flagged {
        text.push_str(&format!(
            "; DISAGREES by more than {:.0} %, likely because {}",
            TOLERANCE * 100.0,
            reasons(level, ratio, rep, host).join("; or ")
        ));
    }
    Some(Comparison { reported_bytes: rep.size_bytes, source: source.into(), ratio, flagged, text })
}

/// The reason a level the OS reports was not found in the latency curve.
pub fn missing_level(level: u32, rep: &OsCache, host: &Host) -> String {
    let mut t =
        format!("the OS reports an L{level} of {} but the curve shows no level for it", mib(rep.size_bytes as f64));
    if level >= 3 && host.hypervisor {
        t.push_str(": in a VM the share of the L3 this guest keeps may be too small or too close in latency to the L2 or DRAM to form a plateau of its own");
    } else if level >= 3 {
        t.push_str(": its latency may lie within 1.4x of the L2's or DRAM's, or its plateau spans too few footprints");
    }
    t
}

/// The running host's facts for [`reasons`].
pub fn host_now() -> Host {
    let id = crate::cpuid::read();
    Host {
        hypervisor: id.hypervisor,
        vendor: id.vendor.or_else(|| crate::sysinfo::cpuinfo_field("vendor_id")),
        logical_cpus: crate::sysinfo::logical_cpus(),
    }
}

/// The data or unified cache of `level` (1, 2, 3) as the OS reports it, with where the figure
/// came from: sysfs, else CPUID (`cpuid`).
pub fn reported<'a>(
    level: u32,
    sysfs: &'a [OsCache],
    cpuid: &'a crate::cpuid::Report,
) -> Option<(&'a OsCache, String)> {
    match crate::sysinfo::data_cache(sysfs, level) {
        Some(c) => Some((c, format!("sysfs cache index of level {level}"))),
        None => crate::sysinfo::data_cache(&cpuid.caches, level)
            .map(|c| (c, format!("CPUID leaf {}", cpuid.cache_leaf.unwrap_or("?")))),
    }
}

/// Put the OS-reported size beside each `cpu.<level>.capacity_bytes` of `out`: in its note, as
/// `cpu.<level>.os_capacity_bytes` (a reported value, not a measurement), and as a warning when
/// they disagree by more than [`TOLERANCE`] (then a private level, L1d or L2, becomes
/// undetermined with the measured value in its reason); a level the OS reports but the curve lacks gets
/// the reason in its note. Sizes from sysfs (`sysfs`), else from CPUID (`cpuid`).
pub fn annotate(out: &mut ProbeOutput, sysfs: &[OsCache], cpuid: &crate::cpuid::Report, host: &Host) {
    for (name, level) in [("l1d", 1u32), ("l2", 2), ("l3", 3)] {
        let Some((rep, source)) = reported(level, sysfs, cpuid) else { continue };
        let key = keys::cpu_capacity_bytes(name);
        let Some(f) = out.findings.get_mut(&key) else { continue };
        match f.as_f64() {
            Some(measured) => {
                if let Some(c) = compare(level, measured, Some((rep, &source)), host) {
                    f.note = Some(match f.note.take() {
                        Some(n) => format!("{n}; {}", c.text),
                        None => c.text.clone(),
                    });
                    if c.flagged {
                        out.warnings.push(format!("{key}: {}", c.text));
                    }
                    // A private level (one core's L1d or L2) this far from the size the OS reports
                    // is what the chase kept under interference, not the cache's size: no number.
                    if c.flagged && level <= 2 {
                        let why = format!(
                            "measured {measured:.0} B; {}; a private level's capacity more than {:.0} % from the OS's figure is not reported as a measurement",
                            f.note.take().unwrap_or_default(),
                            TOLERANCE * 100.0
                        );
                        *f = Finding::undetermined("bytes", &f.method, &why);
                    }
                }
            }
            None => {
                let why = missing_level(level, rep, host);
                f.note = Some(match f.note.take() {
                    Some(n) => format!("{n}; {why}"),
                    None => why,
                });
            }
        }
        out.findings.insert(
            keys::cpu_os_capacity_bytes(name),
            Finding::integer(
                rep.size_bytes,
                "bytes",
                &format!("reported by the OS ({source}), not measured"),
                Confidence::High,
            )
            .with_note(&format!(
                "per instance{}; compare cpu.{name}.capacity_bytes",
                rep.shared_cpus.map(|s| format!(", shared by {s} logical CPUs")).unwrap_or_default()
            )),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache(level: u32, size: u64, shared: u32) -> OsCache {
        OsCache { level, kind: "Unified".into(), size_bytes: size, line_bytes: Some(64), shared_cpus: Some(shared) }
    }

    #[test]
    fn within_tolerance_is_not_flagged() {
        let h = Host::default();
        let c = compare(2, 2337714.0, Some((&cache(2, 2 << 20, 1), "sysfs index2")), &h).unwrap();
        assert!(!c.flagged);
        assert!((c.ratio - 1.1147).abs() < 1e-3);
        assert!(c.text.starts_with("OS reports 2.000 MiB (sysfs index2); measured/reported 1.11"), "{}", c.text);
    }

    #[test]
    fn a_vms_l3_share_is_flagged_with_the_reason() {
        // The H200 host: 15.0 MiB measured against 300 MiB reported, in a KVM guest.
        let h = Host { hypervisor: true, vendor: Some("GenuineIntel".into()), logical_cpus: 16 };
        let c = compare(3, 15026312.0, Some((&cache(3, 300 << 20, 16), "sysfs index3")), &h).unwrap();
        assert!(c.flagged);
        assert!(c.text.contains("DISAGREES") && c.text.contains("VM sees a share"), "{}", c.text);
        assert!(c.text.contains("shared by 16 CPUs"));
    }

    #[test]
    fn larger_than_reported_names_a_victim_cache() {
        let h = Host { vendor: Some("AuthenticAMD".into()), ..Default::default() };
        let c = compare(2, 6.1 * 1048576.0, Some((&cache(2, 512 << 10, 1), "sysfs index2")), &h).unwrap();
        assert!(c.flagged && c.ratio > 10.0);
        assert!(c.text.contains("non-inclusive"), "{}", c.text);
    }

    #[test]
    fn nothing_to_compare() {
        assert!(compare(3, 1e6, None, &Host::default()).is_none());
        assert!(compare(3, f64::NAN, Some((&cache(3, 1 << 20, 1), "x")), &Host::default()).is_none());
        let m = missing_level(3, &cache(3, 32 << 20, 2), &Host { hypervisor: true, ..Default::default() });
        assert!(m.contains("32.000 MiB") && m.contains("VM"), "{m}");
    }

    #[test]
    fn a_private_level_far_from_the_os_figure_is_undetermined() {
        let sysfs = vec![cache(1, 48 << 10, 1), cache(2, 2 << 20, 1), cache(3, 260 << 20, 2)];
        let mut out = ProbeOutput::default();
        for (name, v) in [("l1d", 50_000u64), ("l2", 741_440), ("l3", 5 << 20)] {
            out.finding(&keys::cpu_capacity_bytes(name), Finding::integer(v, "bytes", "m", Confidence::Medium));
        }
        let h = Host { hypervisor: true, ..Default::default() };
        annotate(&mut out, &sysfs, &crate::cpuid::Report::default(), &h);
        assert_eq!(out.findings["cpu.l1d.capacity_bytes"].as_f64(), Some(50_000.0));
        let l2 = &out.findings["cpu.l2.capacity_bytes"];
        assert!(l2.value.is_null() && l2.note.as_deref().unwrap().starts_with("measured 741440 B"), "{:?}", l2.note);
        // A VM's share of the L3 stays a measurement, flagged.
        assert_eq!(out.findings["cpu.l3.capacity_bytes"].as_f64(), Some(5242880.0));
        assert_eq!(out.warnings.len(), 2);
    }
}
