//! `atomics`: latency and throughput of 32-bit fetch-and-adds (docs/SM_MEMORIES.md), kernels in
//! kernels/atomics.cu. Global latency: one thread, a chain of dependent atomics on each of 16 words
//! spread over 1 MiB (each word's slice is in the near or the far L2 partition of the SM that runs
//! the chain), clock64 cycles per atomic; `split_near_far` separates the two clusters. Shared
//! latency: the same chain on one shared word. Global throughput: 4 blocks of 256 threads per SM,
//! four independent atomics per thread per round, all to one word or each thread to its own
//! (consecutive) word, events over a launch calibrated to >= 2 ms. Shared throughput: one block of
//! 1024 threads on one SM, one word or a word per thread, clock64 slope over two round counts.

use super::bw::timed;
use super::smem::{run_read, SIM_LACKS};
use super::{cuda_only_sim_lacks, run_gpu, summarize};
use crate::gpu::Module;
use crate::CudaTarget;
use memscope_core::keys;
use memscope_core::stats::{median, Sample};
use memscope_core::{
    Applicability, Confidence, Finding, Probe, ProbeContext, ProbeError, ProbeOutput, TargetError, TargetInfo,
};

pub struct AtomicsProbe;

/// The near and far clusters of per-word latencies, as indices: near are the values within 20 % of
/// the fastest, far those at least 1.4x the fastest (empty with fewer than 2 such values). None for
/// an empty, non-finite or non-positive input.
pub fn split_near_far(v: &[f64]) -> Option<(Vec<usize>, Vec<usize>)> {
    let min = Sample::new(v).ok()?.min();
    if min <= 0.0 {
        return None;
    }
    let near: Vec<usize> = (0..v.len()).filter(|&i| v[i] <= 1.2 * min).collect();
    let mut far: Vec<usize> = (0..v.len()).filter(|&i| v[i] >= 1.4 * min).collect();
    if far.len() < 2 {
        far.clear();
    }
    Some((near, far))
}

/// The values at `idx`.
fn pick(v: &[f64], idx: &[usize]) -> Vec<f64> {
    idx.iter().map(|&i| v[i]).collect()
}

/// Words of the global chain, and their spacing (bytes).
const CHAIN_WORDS: u64 = 16;
const CHAIN_SPACING: u64 = (64 << 10) + 128;

/// Cycles and %globaltimer ns per atomic for each word: medians over `reps` launches.
fn global_chain(
    t: &mut CudaTarget,
    buf: u64,
    out: u64,
    n: u64,
    reps: usize,
) -> Result<(Vec<f64>, Vec<f64>, u64), TargetError> {
    let k = CHAIN_WORDS as usize;
    let (mut cyc, mut ns) = (vec![Vec::new(); k], vec![Vec::new(); k]);
    let mut sm = 0;
    for _ in 0..reps {
        let v = run_read(
            t,
            Module::Atomics,
            "atom_chain_global",
            1,
            32,
            0,
            &[buf, CHAIN_WORDS, CHAIN_SPACING, n, 0, out],
            out,
            k * 5,
        )?;
        for i in 0..k {
            cyc[i].push(v[i * 5 + 1].wrapping_sub(v[i * 5]) as f64 / n as f64);
            ns[i].push(v[i * 5 + 3].wrapping_sub(v[i * 5 + 2]) as f64 / n as f64);
        }
        sm = v[4];
    }
    Ok((cyc.iter().map(|v| median(v)).collect(), ns.iter().map(|v| median(v)).collect(), sm))
}

/// Operations per second of `grid` x 256 threads, each `rounds` x 4 atomics, with the round count
/// calibrated from one round so a launch takes >= 2 ms; `reps` samples.
fn global_rate(
    t: &mut CudaTarget,
    buf: u64,
    sink: u64,
    mode: u64,
    reps: usize,
) -> Result<(Vec<f64>, u64), TargetError> {
    let grid = t.sms * 4;
    let null = std::ptr::null_mut();
    let threads = grid as f64 * 256.0;
    let run = |t: &mut CudaTarget, n: u64| {
        timed(t, null, 1, |tt| {
            tt.gpu.launch(Module::Atomics, "atom_tp_global", grid, 256, 0, &[buf, n, mode, sink], null)
        })
    };
    run(t, 1)?;
    let ms1 = run(t, 1)?;
    let n = ((2.0 / ms1.max(1e-3)).ceil() as u64).clamp(1, 1 << 16);
    let mut v = Vec::new();
    for _ in 0..reps {
        let ms = run(t, n)?;
        v.push(threads * 4.0 * n as f64 / (ms * 1e-3));
    }
    Ok((v, n))
}

/// Operations per cycle of one SM (1024 threads, 4 atomics a round), clock64 slope over 64 and
/// 256 rounds.
fn shared_rate(t: &mut CudaTarget, out: u64, mode: u64, reps: usize) -> Result<Vec<f64>, TargetError> {
    let mut v = Vec::new();
    for _ in 0..reps {
        let a = run_read(t, Module::Atomics, "atom_tp_shared", 1, 1024, 0, &[64, mode, out], out, 6)?;
        let b = run_read(t, Module::Atomics, "atom_tp_shared", 1, 1024, 0, &[256, mode, out], out, 6)?;
        let dc = b[1].wrapping_sub(b[0]) as f64 - a[1].wrapping_sub(a[0]) as f64;
        v.push(1024.0 * 4.0 * 192.0 / dc);
    }
    Ok(v)
}

/// A latency finding in ns from cycles at the measured clock (undetermined without one).
fn latency(cycles: &[f64], hz: Option<f64>, method: &str) -> Result<Finding, ProbeError> {
    let (c, _) = summarize(cycles, "atomic latency")?;
    Ok(match hz {
        Some(hz) => {
            let ns: Vec<f64> = cycles.iter().map(|x| x / hz * 1e9).collect();
            let (m, s) = summarize(&ns, "atomic latency")?;
            Finding::number(m, "ns", method, Confidence::High).with_spread(s).with_cycles(c)
        }
        None => Finding::undetermined("ns", method, "the SM clock was not measured, so the cycles have no ns")
            .with_cycles(c),
    })
}

fn measure(t: &mut CudaTarget, quick: bool) -> Result<ProbeOutput, ProbeError> {
    let reps = if quick { 3 } else { 5 };
    let hz = t.clock_hz();
    let out_d = t.scratch(4096)?;
    let buf = t.gpu.malloc(4 << 20)?;
    let mut out = ProbeOutput::default();
    let res = (|| -> Result<(), ProbeError> {
        t.gpu.memset(buf, 4 << 20)?;
        // Shared latency.
        let n = 4096u64;
        let mut cyc = Vec::new();
        run_read(t, Module::Atomics, "atom_chain_shared", 1, 32, 0, &[256, out_d], out_d, 5)?;
        for _ in 0..reps {
            let v = run_read(t, Module::Atomics, "atom_chain_shared", 1, 32, 0, &[n, out_d], out_d, 5)?;
            cyc.push(v[1].wrapping_sub(v[0]) as f64 / n as f64);
        }
        let method = format!(
            "one thread, {n} dependent atom.shared.add.u32 on one word (each adds the value the previous returned), clock64, median of {reps}"
        );
        out.finding(keys::ATOMICS_SHARED_LATENCY_NS, latency(&cyc, hz, &method)?);

        // Global latency, near and far.
        let n = 1024u64;
        let (cyc, ns_gt, sm) = global_chain(t, buf, out_d, n, reps)?;
        let method = format!(
            "one thread (SM {sm}), {n} dependent atom.global.add.u32 on each of {CHAIN_WORDS} words {} KiB apart (L2-resident after 16 warm-up \
             atomics), clock64 per atomic, median of {reps} per word; near: the words within 20% of the fastest",
            CHAIN_SPACING as f64 / 1024.0
        );
        match split_near_far(&cyc) {
            Some((near, far)) => {
                let mut f = latency(&pick(&cyc, &near), hz, &method)?;
                if hz.is_some() {
                    f = f.with_check(median(&pick(&ns_gt, &near)), "%globaltimer over the same atomics", 0.05);
                }
                out.finding(
                    keys::ATOMICS_GLOBAL_LATENCY_NS,
                    f.with_note(&format!("{} of {CHAIN_WORDS} words in the near cluster", near.len())),
                );
                let far_f = if far.is_empty() {
                    Finding::undetermined(
                        "ns",
                        &method,
                        "fewer than 2 of the words took at least 1.4x the fastest: no far cluster",
                    )
                } else {
                    latency(&pick(&cyc, &far), hz, &method)?.with_note(&format!(
                        "{} of {CHAIN_WORDS} words at least 1.4x the fastest (their slices in the far L2 partition)",
                        far.len()
                    ))
                };
                out.finding(keys::ATOMICS_GLOBAL_FAR_LATENCY_NS, far_f);
            }
            None => out.finding(
                keys::ATOMICS_GLOBAL_LATENCY_NS,
                Finding::undetermined("ns", &method, "the chain times were not positive"),
            ),
        }

        // Global throughput.
        for (mode, key, what) in [
            (0u64, keys::ATOMICS_GLOBAL_SAME_ADDRESS_OPS_PER_S, "all to one word"),
            (
                1,
                keys::ATOMICS_GLOBAL_DISTINCT_OPS_PER_S,
                "each thread to its own word (consecutive words: a warp covers one 128-byte line)",
            ),
        ] {
            let (v, rounds) = global_rate(t, buf, out_d, mode, reps)?;
            let (m, s) = summarize(&v, "global atomic rate")?;
            let method = format!(
                "{} blocks x 256 threads, {rounds} rounds of 4 independent atom.global.add.u32 per thread, {what}; events over one launch (>= 2 ms), \
                 thread-level operations per second, median of {reps}",
                t.sms * 4
            );
            out.finding(key, Finding::number(m, "ops/s", &method, Confidence::High).with_spread(s));
        }

        // Shared throughput.
        for (mode, key, what) in [
            (0u64, keys::ATOMICS_SHARED_SAME_ADDRESS_OPS_PER_CYCLE_PER_SM, "all to one word"),
            (1, keys::ATOMICS_SHARED_DISTINCT_OPS_PER_CYCLE_PER_SM, "each thread to its own word (conflict-free)"),
        ] {
            let v = shared_rate(t, out_d, mode, reps)?;
            let (m, s) = summarize(&v, "shared atomic rate")?;
            let method = format!(
                "one block of 1024 threads on one SM, 4 independent atom.shared.add.u32 per thread per round, {what}; clock64 slope over 64 vs 256 \
                 rounds, median of {reps}"
            );
            let mut f = Finding::number(m, "ops/cycle", &method, Confidence::High).with_spread(s);
            if let Some(hz) = hz {
                f = f.with_note(&format!(
                    "{:.3e} ops/s for all {} SMs at the measured {:.0} MHz",
                    m * hz * t.sms as f64,
                    t.sms,
                    hz / 1e6
                ));
            }
            out.finding(key, f);
        }
        Ok(())
    })();
    t.gpu.free(buf);
    res.map(|_| out)
}

impl Probe for AtomicsProbe {
    fn key(&self) -> &'static str {
        "atomics"
    }
    fn description(&self) -> &'static str {
        "32-bit atomics: global (L2) latency near and far, same-address and distinct throughput; shared latency and throughput"
    }
    fn applicability(&self, info: &TargetInfo) -> Applicability {
        cuda_only_sim_lacks(info, SIM_LACKS)
    }
    fn run(&self, ctx: &mut ProbeContext<'_>) -> Result<ProbeOutput, ProbeError> {
        run_gpu(ctx, measure)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn near_and_far_clusters_are_separated() {
        let v = [520.0, 530.0, 900.0, 910.0, 515.0, 905.0, 525.0, 890.0];
        let (near, far) = split_near_far(&v).unwrap();
        assert_eq!(near, vec![0, 1, 4, 6]);
        assert_eq!(far, vec![2, 3, 5, 7]);
        assert!((median(&pick(&v, &near)) - 522.5).abs() < 1e-9);
        // One partition only: no far cluster (a single slow word is not one either).
        let (near, far) = split_near_far(&[500.0, 505.0, 510.0, 800.0]).unwrap();
        assert_eq!((near.len(), far.len()), (3, 0));
        assert!(split_near_far(&[]).is_none());
        assert!(split_near_far(&[0.0, 1.0]).is_none());
    }

    #[test]
    fn noisy_clusters_keep_their_medians() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for _ in 0..50 {
            let v: Vec<f64> = (0..16)
                .map(|i| {
                    let base = if i % 3 == 0 { 1000.0 } else { 560.0 };
                    base * (1.0 + 0.04 * (rng.gen::<f64>() * 2.0 - 1.0))
                })
                .collect();
            let (near, far) = split_near_far(&v).unwrap();
            assert_eq!((near.len(), far.len()), (10, 6));
            assert!((median(&pick(&v, &near)) - 560.0).abs() < 0.04 * 560.0);
            assert!((median(&pick(&v, &far)) - 1000.0).abs() < 0.04 * 1000.0);
        }
    }
}
