//! What the host CPU offers the simulator's hot loops (speed only, no seed): they are compiled
//! twice, for any x86-64 and for x86-64-v3 (AVX2, BMI1/2, LZCNT, FMA, MOVBE: every x86 CPU since
//! about 2015), and run the second where the host has it. The results are the same; only the
//! instructions differ (shifts by a register without the CL dance, three-operand forms).

/// The host has the x86-64-v3 features the `#[target_feature]` copies are compiled with.
#[cfg(target_arch = "x86_64")]
#[inline]
pub fn v3() -> bool {
    use std::sync::OnceLock;
    #[cfg(test)]
    if BASELINE.with(|b| b.get()) {
        return false;
    }
    static V3: OnceLock<bool> = OnceLock::new();
    *V3.get_or_init(|| {
        std::is_x86_feature_detected!("avx2")
            && std::is_x86_feature_detected!("bmi1")
            && std::is_x86_feature_detected!("bmi2")
            && std::is_x86_feature_detected!("lzcnt")
            && std::is_x86_feature_detected!("fma")
            && std::is_x86_feature_detected!("movbe")
            && std::is_x86_feature_detected!("popcnt")
            && std::is_x86_feature_detected!("ssse3")
            && std::is_x86_feature_detected!("sse4.1")
            && std::is_x86_feature_detected!("sse4.2")
    })
}

#[cfg(test)]
thread_local! {
    /// Tests: this thread takes the baseline copies even on a v3 host.
    static BASELINE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Tests: `f` on this thread with the copies for the host's features, then with the baseline
/// ones (the results must not differ).
#[cfg(test)]
pub(crate) fn both_ways(mut f: impl FnMut()) {
    f();
    BASELINE.with(|b| b.set(true));
    f();
    BASELINE.with(|b| b.set(false));
}
