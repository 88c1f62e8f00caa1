//! Tests of `cpu.latency`'s sweep and analysis (crate::sweep, crate::latency_sweep,
//! crate::latency) on simulated hosts with known capacities (docs/PERFORMANCE.md, "CPU target";
//! docs/TRUST.md, "The CPU lane's capacities on a shared machine"): a clean host whose buffer
//! has every page colour equally often, and shared VMs (shaped as the Xeon and the AMD dev VM)
//! whose host backs guest memory with randomly placed 4 KiB pages (the L2's set index then takes
//! random page colours) and takes the core away for other guests' time slices (a share of the
//! timed repeats is slowed, by up to 5x). The sweep draws its placements (random orders of the
//! buffer's pages) as the probe does; each simulated run draws its own page colours, placements
//! and disturbances; the capacities must repeat within 10 % over the runs, quick and full, and
//! lie within 25 % of the truth.

use crate::latency::analyze;
use crate::latency_sweep::{footprint_value, in_l2_band, placements};
use crate::sweep;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const PAGE_BYTES: u64 = 4096;

/// The hierarchy of a simulated host.
#[derive(Clone, Copy)]
struct Shape {
    l1d_bytes: f64,
    l1d_ns: f64,
    /// The L1d's ways, and the largest share of hops that miss from where its sets' last way
    /// fills ((W-1)/W of the capacity) up to the capacity (the chase's own stack and code there;
    /// each host draws its share up to this).
    l1d_ways: f64,
    l1d_shelf: f64,
    l2_bytes: f64,
    l2_ways: usize,
    /// The L2 hit latency up to 256 KiB; it creeps up by 30 % to 1.5 MiB (the L1 DTLB's reach of
    /// 4 KiB pages ending).
    l2_ns: f64,
    /// The L3 (the VM's share of it) and what misses it pay.
    l3_bytes: f64,
    l3_ns: f64,
    dram_ns: f64,
}

/// The Xeon dev VM: 48 KiB L1d, 2 MiB 16-way L2, a 9 MiB share of the L3.
const XEON: Shape = Shape {
    l1d_bytes: 49152.0,
    l1d_ns: 1.67,
    l1d_ways: 12.0,
    l1d_shelf: 0.0,
    l2_bytes: 2097152.0,
    l2_ways: 16,
    l2_ns: 5.35,
    l3_bytes: 9.0 * 1048576.0,
    l3_ns: 34.0,
    dram_ns: 140.0,
};

/// The AMD EPYC dev VM: 32 KiB L1d, 1 MiB 8-way L2, a 6 MiB share of the L3.
const EPYC: Shape = Shape {
    l1d_bytes: 32768.0,
    l1d_ns: 1.08,
    l1d_ways: 8.0,
    l1d_shelf: 0.0,
    l2_bytes: 1048576.0,
    l2_ways: 8,
    l2_ns: 3.8,
    l3_bytes: 6.0 * 1048576.0,
    l3_ns: 13.0,
    dram_ns: 120.0,
};

/// The H200 machine's host (results/h200-host-cpu/cpu-lane-repeat): 48 KiB 12-way L1d whose
/// last way's fill (46336 B, 94 % of it) raised latency by 4-8 % (a few % of the hops missing,
/// under the sweep's 12 % refinement ratio, so the coarse interval 32768..46336 B stays
/// unsplit), a 2 MiB 16-way L2 at 5.7 ns, a far level of 70 ns to 8 MiB, DRAM at 125 ns.
const H200_HOST: Shape = Shape {
    l1d_bytes: 49152.0,
    l1d_ns: 1.8,
    l1d_ways: 12.0,
    l1d_shelf: 0.06,
    l2_bytes: 2097152.0,
    l2_ways: 16,
    l2_ns: 5.7,
    l3_bytes: 8.0 * 1048576.0,
    l3_ns: 70.0,
    dram_ns: 125.0,
};

/// One simulated host: what a chase over `f` bytes costs per hop with no disturbance.
struct Host {
    shape: Shape,
    /// The L2's page colour (the set-index bits above the page offset) of each 4 KiB page of the
    /// buffer, in buffer order.
    colours: Vec<usize>,
    /// How many colours the L2 has (capacity / ways / page).
    n_colours: usize,
    /// Share of the hops that miss the L1d one grid step past its capacity (pseudo-LRU).
    l1_share: f64,
    /// Share of the hops that miss the L1d where its sets' last way fills (`Shape::l1d_shelf`).
    l1_shelf: f64,
    /// Another thread shares the core through the run: it takes a share of the L1d (misses rise
    /// from 0.65 of its capacity to all at 1.12 of it, convex in log footprint, as the Xeon dev
    /// VM's loaded runs rose) and a quarter of the L2's ways.
    core_shared: bool,
}

impl Host {
    fn new(shape: Shape, rng: &mut ChaCha8Rng, random_colours: bool, max_bytes: u64) -> Host {
        let n_colours = (shape.l2_bytes as usize) / shape.l2_ways / PAGE_BYTES as usize;
        let pages = (max_bytes / PAGE_BYTES) as usize;
        let colours =
            (0..pages).map(|k| if random_colours { rng.gen_range(0..n_colours) } else { k % n_colours }).collect();
        let l1_share = rng.gen_range(0.3..0.9);
        let l1_shelf = if shape.l1d_shelf > 0.0 { shape.l1d_shelf * rng.gen::<f64>() } else { 0.0 };
        Host { shape, colours, n_colours, l1_share, l1_shelf, core_shared: false }
    }

    /// The share of a cyclic chase's hops over the first `f` bytes of a placement (`order`, a
    /// random order of the buffer's pages) that miss the L2: every line of a set that holds more
    /// lines than the L2 has ways (LRU under a cyclic chase).
    fn l2_miss_share(&self, f: u64, order: &[u32]) -> f64 {
        let pages = (f.div_ceil(PAGE_BYTES) as usize).min(order.len());
        let mut count = vec![0usize; self.n_colours];
        for &p in &order[..pages] {
            count[self.colours[p as usize]] += 1;
        }
        let ways = if self.core_shared { self.shape.l2_ways * 3 / 4 } else { self.shape.l2_ways };
        let missing: usize = count.iter().filter(|&&n| n > ways).sum();
        missing as f64 / pages as f64
    }

    fn latency_ns(&self, f: u64, order: &[u32]) -> f64 {
        let (ff, s) = (f as f64, &self.shape);
        let l2 = s.l2_ns * (1.0 + 0.3 * ((ff / 262144.0).log2() / 2.6).clamp(0.0, 1.0));
        if self.core_shared && ff <= 1.12 * s.l1d_bytes {
            let onset = 0.65 * s.l1d_bytes;
            let miss = ((ff / onset).ln() / (1.12f64 / 0.65).ln()).clamp(0.0, 1.0).powi(2);
            return s.l1d_ns + miss * (l2 - s.l1d_ns);
        }
        if ff <= s.l1d_bytes * (s.l1d_ways - 1.0) / s.l1d_ways {
            return s.l1d_ns;
        }
        if ff <= s.l1d_bytes {
            return s.l1d_ns + self.l1_shelf * (l2 - s.l1d_ns);
        }
        if ff <= s.l1d_bytes * 1.06 {
            return s.l1d_ns + self.l1_share * (l2 - s.l1d_ns);
        }
        let next = if ff <= s.l3_bytes { s.l3_ns } else { s.dram_ns };
        let m = self.l2_miss_share(f, order);
        l2 + m * (next - l2)
    }

    /// One chase of a footprint as crate::latency_sweep's does it: on each placement `repeats`
    /// timed repeats (1 % jitter, and on a shared host a share of them slowed by the core being
    /// taken away, 1.1x-5x); each placement's fastest.
    fn chase(&self, f: u64, orders: &[Vec<u32>], repeats: usize, shared: bool, rng: &mut ChaCha8Rng) -> Vec<f64> {
        orders
            .iter()
            .map(|order| {
                let y = self.latency_ns(f, order);
                (0..repeats)
                    .map(|_| {
                        let jitter = 1.0 + 0.01 * rng.gen::<f64>();
                        let hit = if shared && rng.gen_bool(0.4) { rng.gen_range(1.1..5.0) } else { 1.0 };
                        y * jitter * hit
                    })
                    .fold(f64::INFINITY, f64::min)
            })
            .collect()
    }
}

/// The sweep as crate::latency_sweep runs it (coarse grid to DRAM, refinement on the first pass,
/// further passes, refinement of the final curve), on a simulated host.
fn sweep_run(
    host: &Host,
    (near, far): (u32, u32),
    repeats: usize,
    passes: usize,
    shared: bool,
    rng: &mut ChaCha8Rng,
) -> Vec<Option<f64>> {
    let orders = placements(64 << 20, near, rng);
    // The placements a footprint gets (crate::latency_sweep::L2_BAND_BYTES).
    let on = |f: u64| &orders[..if in_l2_band(f) { near } else { far.min(near) } as usize];
    let mut x: Vec<u64> = Vec::new();
    let mut s: Vec<Vec<f64>> = Vec::new();
    let best = |s: &[Vec<f64>]| -> Vec<f64> { s.iter().map(|v| footprint_value(v)).collect() };
    let again = |s: &mut Vec<f64>, f: u64, times: usize, rng: &mut ChaCha8Rng| {
        for _ in 0..times {
            for (old, new) in s.iter_mut().zip(host.chase(f, on(f), repeats, shared, rng)) {
                *old = old.min(new);
            }
        }
    };
    let add = |x: &mut Vec<u64>, s: &mut Vec<Vec<f64>>, f: u64, times: usize, rng: &mut ChaCha8Rng| {
        let i = x.partition_point(|&v| v < f);
        x.insert(i, f);
        let mut v = host.chase(f, on(f), repeats, shared, rng);
        again(&mut v, f, times - 1, rng);
        s.insert(i, v);
    };
    for f in sweep::coarse(64 << 20, 64) {
        add(&mut x, &mut s, f, 1, rng);
        if sweep::dram_reached(&x, &best(&s)) {
            break;
        }
    }
    for _ in 0..3 {
        for f in sweep::refine(&x, &best(&s), 64) {
            add(&mut x, &mut s, f, 1, rng);
        }
    }
    for (i, &f) in x.iter().enumerate() {
        again(&mut s[i], f, passes - 1, rng);
    }
    for _ in 0..2 {
        for f in sweep::refine(&x, &best(&s), 64) {
            add(&mut x, &mut s, f, passes, rng);
        }
    }
    let xf: Vec<f64> = x.iter().map(|&v| v as f64).collect();
    let out = analyze(&xf, &best(&s), &s, None, Some(host.shape.l1d_bytes), "test");
    ["l1d", "l2"].iter().map(|l| out.findings[&format!("cpu.{l}.capacity_bytes")].as_f64()).collect()
}

/// Ten runs each of quick and full, with the plan's placements, repeats and passes; per level the
/// values.
fn runs(shape: Shape, random_colours: bool, shared: bool, seed: u64) -> [Vec<f64>; 2] {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut got = [Vec::new(), Vec::new()];
    for run in 0..20 {
        let host = Host::new(shape, &mut rng, random_colours, 64 << 20);
        let p = crate::latency_sweep::plan(run % 2 == 0, None, None);
        let (repeats, passes) = (p.repeats as usize, p.passes as usize);
        let n_placements = (p.placements, p.other_placements);
        for (level, v) in sweep_run(&host, n_placements, repeats, passes, shared, &mut rng).into_iter().enumerate() {
            if let Some(v) = v {
                got[level].push(v);
            }
        }
    }
    got
}

fn check(shape: Shape, got: &[Vec<f64>; 2], what: &str) {
    for (level, truth) in [(0, shape.l1d_bytes), (1, shape.l2_bytes)] {
        let v = &got[level];
        assert!(v.len() >= 18, "{what}, level {level}: determined in {} of 20 runs: {v:?}", v.len());
        let s = crate::curve_checks::spread(v);
        assert!(s <= 0.10, "{what}, level {level}: spread {:.1} %: {v:?}", s * 100.0);
        assert!(v.iter().all(|x| (x / truth - 1.0).abs() <= 0.25), "{what}, level {level}: {v:?}");
    }
}

#[test]
fn a_clean_host_repeats_its_capacities() {
    check(XEON, &runs(XEON, false, false, 1), "clean");
}

#[test]
fn a_shared_vm_with_random_page_colours_repeats_its_capacities() {
    for seed in [2, 3, 4] {
        check(XEON, &runs(XEON, true, true, seed), &format!("shared VM, seed {seed}"));
    }
}

#[test]
fn a_shared_vm_with_an_eight_way_l2_repeats_its_capacities() {
    // Eight ways: the share of over-full sets moves more from one draw of pages to the next.
    for seed in [5, 6, 7] {
        check(EPYC, &runs(EPYC, true, true, seed), &format!("EPYC-like VM, seed {seed}"));
    }
}

#[test]
fn the_h200_host_shape_repeats_its_capacities() {
    // The last way's few misses at 46336 B leave 32768..46336 B unrefined and can end the knee
    // detector's plateau at 32768 B; the L1d is read in the refined bracket of its half-way
    // crossing all the same (five of ten runs on the H200 host were undetermined before).
    check(H200_HOST, &runs(H200_HOST, true, false, 8), "H200 host, quiet");
    check(H200_HOST, &runs(H200_HOST, true, true, 9), "H200 host, shared");
}

#[test]
fn a_run_with_the_core_shared_reads_neither_l1d_nor_l2() {
    // Another thread on the core through the run takes a share of both private levels: the L1d
    // rises gradually and says so, and the L2, whose step comes a quarter early, is undetermined
    // with it rather than read short (the H200 host's full-1: 1.55 MiB against 1.95-2.01 MiB).
    let mut rng = ChaCha8Rng::seed_from_u64(10);
    for run in 0..6 {
        for shape in [H200_HOST, XEON, EPYC] {
            let mut host = Host::new(shape, &mut rng, true, 64 << 20);
            host.core_shared = true;
            let p = crate::latency_sweep::plan(run % 2 == 0, None, None);
            let got = sweep_run(&host, (p.placements, p.other_placements), 1, p.passes as usize, run >= 3, &mut rng);
            assert_eq!(got, vec![None, None], "run {run}, L1d {}", shape.l1d_bytes);
        }
    }
}
