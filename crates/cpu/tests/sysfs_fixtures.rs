//! The sysfs reader on fixture trees (crates/cpu/fixtures/sysfs/*), and the cache cross-check
//! on what they report.

use memscope_core::{Confidence, Finding, ProbeOutput};
use memscope_cpu::oscheck::{annotate, compare, Host};
use memscope_cpu::sysinfo::{cpufreq_at, data_cache, os_caches_at};
use std::path::PathBuf;

fn root(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/sysfs").join(name)
}

#[test]
fn zen3_vm_tree() {
    let c = os_caches_at(&root("zen3-vm"), 0);
    assert_eq!(c.len(), 4);
    let sizes: Vec<(u32, &str, u64)> = c.iter().map(|c| (c.level, c.kind.as_str(), c.size_bytes)).collect();
    assert_eq!(
        sizes,
        [(1, "Data", 32 << 10), (1, "Instruction", 32 << 10), (2, "Unified", 512 << 10), (3, "Unified", 32 << 20)]
    );
    assert_eq!(data_cache(&c, 3).unwrap().shared_cpus, Some(2));
    assert_eq!(data_cache(&c, 1).unwrap().line_bytes, Some(64));
    assert_eq!(cpufreq_at(&root("zen3-vm"), 0), [None; 4]);
}

#[test]
fn h200_host_and_dev_vm_trees() {
    let h = os_caches_at(&root("xeon-h200-host"), 0);
    assert_eq!(data_cache(&h, 3).map(|c| (c.size_bytes, c.shared_cpus)), Some((300 << 20, Some(16))));
    let d = os_caches_at(&root("xeon-dev-vm"), 0);
    assert_eq!(data_cache(&d, 1).unwrap().size_bytes, 48 << 10);
    assert_eq!(data_cache(&d, 2).unwrap().size_bytes, 2 << 20);
    assert_eq!(data_cache(&d, 3).unwrap().size_bytes, 480 << 20);
    // No cpu1 in the fixtures, no tree at all: nothing, not a panic.
    assert!(os_caches_at(&root("xeon-dev-vm"), 1).is_empty());
    assert!(os_caches_at(&root("absent"), 0).is_empty());
}

#[test]
fn cpufreq_tree() {
    let f = cpufreq_at(&root("laptop-cpufreq"), 0);
    assert_eq!(f, [Some(2.4e9), Some(4.2e9), Some(0.4e9), Some(3.911e9)]);
}

#[test]
fn the_h200_hosts_findings_against_its_tree() {
    // The committed H200 run's capacities (results/h200/full-2026-11-30T0233/run1) against the
    // sizes its sysfs reported: L1d and L2 within 25 %, L3 (the VM's share) flagged.
    let caches = os_caches_at(&root("xeon-h200-host"), 0);
    let mut out = ProbeOutput::default();
    for (k, v) in [("l1d", 46336u64), ("l2", 2337714), ("l3", 15026312)] {
        out.finding(&format!("cpu.{k}.capacity_bytes"), Finding::integer(v, "bytes", "chase", Confidence::Medium));
    }
    let host = Host { hypervisor: true, vendor: Some("GenuineIntel".into()), logical_cpus: 16 };
    annotate(&mut out, &caches, &Default::default(), &host);
    assert_eq!(out.findings["cpu.l3.capacity_bytes"].as_f64(), Some(15026312.0), "the measured value stays");
    assert_eq!(out.findings["cpu.l3.os_capacity_bytes"].as_f64(), Some((300u64 << 20) as f64));
    assert!(out.findings["cpu.l3.capacity_bytes"].note.as_deref().unwrap().contains("DISAGREES"));
    assert!(!out.findings["cpu.l2.capacity_bytes"].note.as_deref().unwrap().contains("DISAGREES"));
    assert!(!out.findings["cpu.l1d.capacity_bytes"].note.as_deref().unwrap().contains("DISAGREES"));
    assert_eq!(out.warnings.len(), 1, "{:?}", out.warnings);
    // A missing L3 gets the reason.
    let mut none = ProbeOutput::default();
    none.finding("cpu.l3.capacity_bytes", Finding::undetermined("bytes", "chase", "3 level(s) found; no l3 level"));
    annotate(&mut none, &os_caches_at(&root("zen3-vm"), 0), &Default::default(), &host);
    let n = none.findings["cpu.l3.capacity_bytes"].note.clone().unwrap();
    assert!(n.contains("no l3 level") && n.contains("OS reports an L3 of 32.000 MiB"), "{n}");
    assert!(compare(3, 1.0, None, &host).is_none());
}
