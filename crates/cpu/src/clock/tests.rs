//! Tests of the clock cross-check on synthetic inputs, and of the instrument on this host.

use super::*;

fn h200_host() -> Sources {
    // The GPU machine's host as its results record it: a KVM guest with a 2.1 GHz TSC, cpuinfo
    // 2100 MHz, no cpufreq.
    Sources {
        tsc_hz: Some(2.09998e9),
        cpuinfo_hz: Some(2.1e9),
        vendor: Some("GenuineIntel".into()),
        ..Default::default()
    }
}

#[test]
fn folded_add_chain_reads_above_the_range() {
    // 17.19 GHz is what the add chain measured there (results/h200/full-2026-11-30T0233/run1).
    let c = cross_check(17.19e9, &h200_host());
    assert_eq!(c.verdict, Verdict::AboveRange);
    assert_eq!(c.nominal.unwrap().0, "tsc_measured");
    // No turbo maximum reported: the top is twice the nominal, plus 5 %.
    assert!((c.range_hz.unwrap()[1] / (2.0 * 1.05 * 2.09998e9) - 1.0).abs() < 1e-9);
    assert!(c.top_source.is_none());
    let rel = c.relative.iter().find(|(k, _)| *k == "proc_cpuinfo_mhz").unwrap().1;
    assert!((rel - (17.19 / 2.1 - 1.0)).abs() < 1e-9);
}

#[test]
fn turbo_clock_agrees_and_below_nominal_does_not() {
    let s = h200_host();
    assert_eq!(cross_check(3.0e9, &s).verdict, Verdict::Agrees);
    assert_eq!(cross_check(2.05e9, &s).verdict, Verdict::Agrees);
    assert_eq!(cross_check(1.5e9, &s).verdict, Verdict::BelowRange);
}

#[test]
fn cpuid_and_cpufreq_define_the_range_first() {
    let s = Sources {
        cpuid_base_hz: Some(2.4e9),
        cpuid_max_hz: Some(4.2e9),
        cpufreq_min_hz: Some(0.4e9),
        tsc_hz: Some(2.4e9),
        ..Default::default()
    };
    let c = cross_check(4.3e9, &s);
    assert_eq!(c.nominal.unwrap(), ("cpuid_0x16_base", 2.4e9));
    assert_eq!(c.top_source, Some("cpuid_0x16_max"));
    assert_eq!(c.verdict, Verdict::Agrees, "within 5 % of the turbo maximum");
    assert_eq!(cross_check(4.5e9, &s).verdict, Verdict::AboveRange);
    // A powersave governor may run below nominal, down to cpufreq's minimum.
    assert_eq!(cross_check(0.8e9, &s).verdict, Verdict::Agrees);
    // cpufreq alone (no CPUID 0x16): base_frequency is the nominal, cpuinfo_max_freq the top.
    let f = Sources { cpufreq_base_hz: Some(2.4e9), cpufreq_max_hz: Some(4.2e9), ..Default::default() };
    let c = cross_check(3.9e9, &f);
    assert_eq!((c.nominal.unwrap().0, c.top_source, c.verdict), ("cpufreq_base", Some("cpufreq_max"), Verdict::Agrees));
}

#[test]
fn no_source_means_no_reference() {
    let c = cross_check(3e9, &Sources::default());
    assert_eq!(c.verdict, Verdict::NoReference);
    assert!(c.relative.is_empty() && c.range_hz.is_none());
}

#[test]
fn witness_note_says_when_the_add_chain_is_folded() {
    let r = |ops| ChainRate { ops_per_s: ops, median_ops_per_s: ops };
    let mut m = Measured {
        hz: 2.6e9,
        method: "imul",
        primary_cycles: 3.0,
        primary: r(2.6e9 / 3.0),
        witness_method: "add",
        witness_cycles: 1.0,
        witness: r(2.62e9),
    };
    assert!(witness_note(&m).contains("agrees"));
    m.witness = r(23.4e9);
    let n = witness_note(&m);
    assert!(n.contains("not used") && n.contains("23.40 GHz"), "{n}");
}

#[test]
fn this_host_clock_is_plausible_and_agrees_with_the_os() {
    let m = measure();
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        assert!(m.is_none());
        return;
    }
    let m = m.expect("a clock on x86-64 and aarch64");
    assert!((3e8..8e9).contains(&m.hz), "{}", m.hz);
    let id = crate::cpuid::read();
    let tsc = crate::target::tsc_calibrate_for_tests();
    let s = super::host_sources(tsc, &id);
    let c = cross_check(m.hz, &s);
    // A shared CI VM may steal cycles (below the range); it must never read above it.
    assert_ne!(c.verdict, Verdict::AboveRange, "{m:?} {c:?}");
}
