//! Tests of the plateau/knee detector on synthetic latency-versus-footprint curves with known
//! levels and capacities: noise, outliers, short intermediate plateaus, gradual ramps.

use super::*;
use proptest::prelude::*;
use rand::{Rng, SeedableRng};

const KIB: f64 = 1024.0;
const MIB: f64 = 1024.0 * 1024.0;

/// Footprints from `from` to `to`, `per_octave` points per doubling (powers of two included).
fn grid(from: f64, to: f64, per_octave: u32) -> Vec<f64> {
    let mut v = Vec::new();
    let mut k = 0;
    loop {
        let x = (from * 2f64.powf(k as f64 / per_octave as f64)).round();
        if x > to * 1.0001 {
            return v;
        }
        v.push(x);
        k += 1;
    }
}

/// Synthetic curve: level k (latency, capacity) holds footprints up to its capacity; after each
/// capacity, `ramp` grid points climb geometrically to the next level. Multiplicative jitter
/// uniform in +-`noise`; `outliers` isolated points multiplied by 1.6, placed inside plateaus (two
/// points from any ramp): an outlier on a ramp point can mimic a two-point plateau, which no
/// detector that accepts two-point levels can tell apart.
fn synth(x: &[f64], levels: &[(f64, f64)], ramp: usize, noise: f64, outliers: usize, seed: u64) -> Vec<f64> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut y = Vec::with_capacity(x.len());
    let mut plateau_interior = Vec::with_capacity(x.len());
    for (i, &f) in x.iter().enumerate() {
        let k = levels.iter().position(|&(_, c)| f <= c).unwrap_or(levels.len() - 1);
        let mut v = levels[k].0;
        let mut on_ramp = false;
        if k > 0 {
            let first_after = x.iter().position(|&g| g > levels[k - 1].1).unwrap();
            let pos = i - first_after;
            on_ramp = pos < ramp + 2;
            if pos < ramp {
                let t = (pos + 1) as f64 / (ramp + 1) as f64;
                v = (levels[k - 1].0.ln() + t * (levels[k].0.ln() - levels[k - 1].0.ln())).exp();
            }
        }
        let next_knee = levels[k].1;
        let near_knee = x.get(i + 1).is_some_and(|&g| g > next_knee) || x.get(i + 2).is_some_and(|&g| g > next_knee);
        y.push(v * (1.0 + noise * rng.gen_range(-1.0..=1.0)));
        plateau_interior.push(!on_ramp && !near_knee);
    }
    // Isolated outliers, never at the first/last two points and never adjacent.
    let mut placed = Vec::new();
    let mut tries = 0;
    while placed.len() < outliers && x.len() > 8 && tries < 10_000 {
        tries += 1;
        let i = rng.gen_range(2..x.len() - 2);
        if plateau_interior[i] && placed.iter().all(|&p: &usize| p.abs_diff(i) > 2) {
            y[i] *= 1.6;
            placed.push(i);
        }
    }
    y
}

fn within(est: f64, truth: f64, frac: f64) -> bool {
    (est / truth - 1.0).abs() <= frac
}

#[test]
fn clean_four_levels() {
    let x = grid(4.0 * KIB, 256.0 * MIB, 4);
    let lv = [(1.3, 32.0 * KIB), (4.0, 512.0 * KIB), (15.0, 32.0 * MIB), (110.0, f64::INFINITY)];
    let p = detect_plateaus(&x, &synth(&x, &lv, 0, 0.0, 0, 1), 1.25);
    assert_eq!(p.len(), 4, "{p:#?}");
    for (pl, l) in p.iter().zip(&lv) {
        assert!(within(pl.latency, l.0, 1e-9));
        assert_eq!(pl.latency_mad, 0.0);
    }
    // Sharp steps: the capacity is the last footprint on the plateau, exactly.
    assert_eq!(p[0].capacity, Some(32.0 * KIB));
    assert_eq!(p[1].capacity, Some(512.0 * KIB));
    assert_eq!(p[2].capacity, Some(32.0 * MIB));
    assert_eq!(p[3].capacity, None);
    assert_eq!(p[3].midpoint, None);
    // A sharp step: the midpoint lies within the one sweep step after the knee.
    for level in &p[..3] {
        let (c, m) = (level.capacity.unwrap(), level.midpoint.unwrap());
        assert!(m >= c && m <= c * 1.19, "{c} {m}");
    }
    assert_eq!(p[0].points.start, 0);
    assert_eq!(p[3].points.end, x.len());
}

#[test]
fn seed_hierarchy_with_two_point_intermediate_plateau() {
    // 15 -> 40 -> 127 -> 255 ns (seed 000), the 40 ns level only two points long.
    let x = grid(16.0 * KIB, 256.0 * MIB, 4);
    let c0 = 128.0 * KIB;
    let c1 = x[x.iter().position(|&v| v > c0).unwrap() + 1]; // two grid points after c0
    let lv = [(15.4, c0), (40.0, c1), (127.4, 48.0 * MIB), (255.4, f64::INFINITY)];
    for seed in 0..20 {
        let y = synth(&x, &lv, 0, 0.02, 0, seed);
        let p = detect_plateaus(&x, &y, 1.3);
        assert_eq!(p.len(), 4, "seed {seed}: {p:#?}");
        assert_eq!(p[1].points.len(), 2);
        assert!(within(p[1].latency, 40.0, 0.05));
        assert!(within(p[0].capacity.unwrap(), c0, 0.01));
        assert!(within(p[1].capacity.unwrap(), c1, 0.01));
        // 48 MiB is not on the grid: within one sweep step (2^0.25) below.
        assert!(within(p[2].capacity.unwrap(), 48.0 * MIB, 0.19));
    }
}

#[test]
fn short_plateau_between_ramps_is_its_own_level() {
    // A far-L2 style level: ramp (1 point), 2 flat points, ramp (2 points), next level.
    let x: Vec<f64> = (0..30).map(|i| 1000.0 * 1.25f64.powi(i)).collect();
    let mut y = vec![100.0; 10];
    y.extend([140.0, 180.0, 182.0, 240.0, 300.0]);
    y.extend(vec![400.0; 15]);
    let p = detect_plateaus(&x, &y, 1.25);
    assert_eq!(p.len(), 3, "{p:#?}");
    assert_eq!(p[1].points, 11..13);
    assert!(within(p[1].latency, 181.0, 0.01));
    assert!(within(p[0].capacity.unwrap(), x[9], 0.25));
    assert!(within(p[1].capacity.unwrap(), x[12], 0.25));
}

#[test]
fn gradual_ramps_put_the_knee_where_the_ramp_starts() {
    let x = grid(4.0 * KIB, 128.0 * MIB, 4);
    let lv = [(1.3, 32.0 * KIB), (4.5, 512.0 * KIB), (16.0, 32.0 * MIB), (100.0, f64::INFINITY)];
    for ramp in 1..=4 {
        for seed in 0..10 {
            let p = detect_plateaus(&x, &synth(&x, &lv, ramp, 0.02, 0, seed), 1.25);
            assert_eq!(p.len(), 4, "ramp {ramp} seed {seed}: {p:#?}");
            for k in 0..3 {
                let c = p[k].capacity.unwrap();
                // Within one sweep step (2^0.25 = 1.19) of the true capacity.
                assert!(c >= lv[k].1 / 1.19 && c <= lv[k].1 * 1.19, "ramp {ramp} seed {seed} level {k}: {c}");
                assert!(within(p[k].latency, lv[k].0, 0.05));
            }
        }
    }
}

#[test]
fn noise_and_isolated_outliers() {
    let x = grid(4.0 * KIB, 128.0 * MIB, 4);
    let lv = [(1.3, 64.0 * KIB), (4.5, 1.0 * MIB), (16.0, 16.0 * MIB), (100.0, f64::INFINITY)];
    for seed in 0..30 {
        let y = synth(&x, &lv, 2, 0.04, 4, seed);
        let p = detect_plateaus(&x, &y, 1.3);
        assert_eq!(
            p.len(),
            4,
            "seed {seed}: {:?}",
            p.iter().map(|q| (q.latency, q.points.clone())).collect::<Vec<_>>()
        );
        for k in 0..3 {
            assert!(within(p[k].capacity.unwrap(), lv[k].1, 0.25), "seed {seed} level {k}");
        }
    }
}

#[test]
fn two_adjacent_outliers_are_not_a_level() {
    let x: Vec<f64> = (0..24).map(|i| 1000.0 * 1.19f64.powi(i)).collect();
    let mut y = vec![10.0; 12];
    y.extend(vec![30.0; 12]);
    y[5] = 20.0;
    y[6] = 20.5;
    let p = detect_plateaus(&x, &y, 1.25);
    assert_eq!(p.len(), 2, "{p:#?}");
    assert_eq!(p[0].points, 0..12);
    assert_eq!(p[0].latency, 10.0);
    assert_eq!(p[0].capacity, Some(x[11]));
}

#[test]
fn very_noisy_last_level_is_still_one_level() {
    // A DRAM level on a loaded machine: +-25% jitter around 140 ns after a clean 16 ns level.
    let x: Vec<f64> = (0..40).map(|i| 1000.0 * 1.19f64.powi(i)).collect();
    let mut y = vec![16.0; 20];
    let jitter =
        [0.9, 1.2, 0.8, 1.25, 1.0, 0.78, 1.22, 1.05, 0.85, 1.2, 0.95, 1.24, 0.8, 1.1, 0.9, 1.25, 0.82, 1.0, 1.15, 0.88];
    y.extend(jitter.iter().map(|j| 140.0 * j));
    let p = detect_plateaus(&x, &y, 1.3);
    assert_eq!(p.len(), 2, "{p:#?}");
    assert_eq!(p[1].points.end, 40);
    assert_eq!(p[1].capacity, None);
    assert!(within(p[1].latency, 140.0, 0.1));
    assert_eq!(p[0].capacity, Some(x[19]));
}

#[test]
fn slope_below_the_step_ratio_stays_one_level() {
    // A plateau creeping up 20% over 20 points (TLB pressure) is one level at min ratio 1.3.
    let x: Vec<f64> = (0..30).map(|i| 1000.0 * 1.19f64.powi(i)).collect();
    let mut y: Vec<f64> = (0..20).map(|i| 40.0 * (1.0 + 0.01 * i as f64)).collect();
    y.extend(vec![120.0; 10]);
    let p = detect_plateaus(&x, &y, 1.3);
    assert_eq!(p.len(), 2, "{p:#?}");
    assert_eq!(p[0].points, 0..20);
}

#[test]
fn single_level_and_bad_input() {
    let x: Vec<f64> = (1..=10).map(|v| v as f64).collect();
    let p = detect_plateaus(&x, &[5.0; 10], 1.2);
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].capacity, None);
    assert_eq!((p[0].x_first, p[0].x_last), (1.0, 10.0));
    assert!(detect_plateaus(&x, &[5.0; 9], 1.2).is_empty());
    assert!(detect_plateaus(&[1.0], &[1.0], 1.2).is_empty());
    assert!(detect_plateaus(&x, &[5.0; 10], 1.0).is_empty());
    let mut bad = vec![5.0; 10];
    bad[3] = f64::NAN;
    assert!(detect_plateaus(&x, &bad, 1.2).is_empty());
    bad[3] = 0.0;
    assert!(detect_plateaus(&x, &bad, 1.2).is_empty());
    // A curve that only rises has no plateau of two flat points.
    let rising: Vec<f64> = (0..10).map(|i| 2f64.powi(i)).collect();
    assert!(detect_plateaus(&x, &rising, 1.2).is_empty());
}

#[test]
fn interpolated_capacity_between_grid_points() {
    // Partial hit fraction at the first point past the knee: capacity C = x_next (1 - m).
    let x = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0];
    // lo 10, hi 20; at x = 5 the latency is 12 -> m = 0.2 -> C = 4.0 (clamped to >= x_last 4).
    // Use x_next = 5 and y = 11 -> m = 0.1 -> C = 4.5.
    let y = [10.0, 10.0, 10.0, 10.0, 11.0, 20.0, 20.0, 20.0];
    let p = detect_plateaus(&x, &y, 1.3);
    assert_eq!(p.len(), 2, "{p:#?}");
    assert_eq!(p[0].points, 0..4);
    assert!((p[0].capacity.unwrap() - 4.5).abs() < 1e-9, "{:?}", p[0].capacity);
}

#[test]
fn midpoint_of_a_page_colouring_ramp() {
    // Random 4 KiB pages into a physically indexed cache of capacity C: misses start near C/2
    // and reach half at about C. Model the miss fraction as a logistic in log2(F / C).
    let x = grid(4.0 * KIB, 64.0 * MIB, 4);
    let c = 512.0 * KIB;
    let (lo, hi) = (4.0, 15.0);
    let y: Vec<f64> = x
        .iter()
        .map(|&f| {
            let m = 1.0 / (1.0 + (-4.0 * (f / c).log2()).exp());
            lo + m * (hi - lo)
        })
        .collect();
    let p = detect_plateaus(&x, &y, 1.3);
    assert_eq!(p.len(), 2, "{p:#?}");
    let ramp_start = p[0].capacity.unwrap();
    let mid = p[0].midpoint.unwrap();
    assert!(ramp_start < 0.75 * c, "the ramp starts early: {ramp_start}");
    assert!(within(mid, c, 0.2), "midpoint {mid}");
    // By construction the midpoint crosses sqrt(lo * hi).
    let i = x.iter().position(|&v| v >= mid).unwrap();
    assert!(y[i - 1] <= (lo * hi).sqrt() && y[i] >= (lo * hi).sqrt() * 0.999);
}

proptest! {
    // A fixed seed keeps CI deterministic; widen or re-seed when working on the detector (12000
    // random cases passed after the fix that `levels_one_and_a_half_apart_with_ramps_and_noise`
    // holds).
    #![proptest_config(ProptestConfig { cases: 64, rng_seed: proptest::test_runner::RngSeed::Fixed(1), ..ProptestConfig::default() })]
    #[test]
    fn recovers_random_hierarchies(
        n_levels in 2usize..=4,
        first_lat in 0.5f64..20.0,
        ratios in prop::collection::vec(1.5f64..4.0, 3),
        gaps in prop::collection::vec(2u32..5, 4),
        start_octave in 1u32..4,
        ramp in 0usize..=3,
        noise in 0.0f64..0.03,
        outliers in 0usize..3,
        seed in 0u64..1000,
    ) {
        let x = grid(4.0 * KIB, 4.0 * KIB * 2f64.powi(start_octave as i32 + gaps.iter().sum::<u32>() as i32 + 3), 4);
        let mut lv = Vec::new();
        let mut lat = first_lat;
        let mut cap = 4.0 * KIB * 2f64.powi(start_octave as i32);
        for k in 0..n_levels {
            let c = if k + 1 == n_levels { f64::INFINITY } else { cap };
            lv.push((lat, c));
            lat *= ratios[k.min(2)];
            cap *= 2f64.powi(gaps[k] as i32);
        }
        let y = synth(&x, &lv, ramp, noise, outliers, seed);
        let p = detect_plateaus(&x, &y, 1.3);
        prop_assert_eq!(p.len(), n_levels, "{:?}", p.iter().map(|q| (q.latency, q.points.clone())).collect::<Vec<_>>());
        for k in 0..n_levels {
            prop_assert!(within(p[k].latency, lv[k].0, 0.08), "level {} latency {} vs {}", k, p[k].latency, lv[k].0);
            if k + 1 < n_levels {
                let c = p[k].capacity.unwrap();
                prop_assert!(within(c, lv[k].1, 0.25), "level {} capacity {} vs {}", k, c, lv[k].1);
            }
        }
        prop_assert!(p.last().unwrap().capacity.is_none());
        for q in &p[..n_levels - 1] {
            let (c, m) = (q.capacity.unwrap(), q.midpoint.unwrap());
            // Sharp steps and short ramps: the midpoint is at most a few sweep steps past the knee.
            prop_assert!(m >= c && m <= c * 2f64.powf((ramp as f64 + 2.0) / 4.0), "{} {}", c, m);
        }
    }
}

/// The proptest's rare failure (n_levels 4, first_lat 0.5, ratios 1.5, gaps 2 octaves, a 3-point
/// ramp, 3 % noise, seed 122): the third level read as a ramp. The noise floor of the ramp
/// trimming came from the running median's differences, which shrink on a plateau, so a plateau
/// point 0.05 below its neighbours (within the 3 % noise) was trimmed as a ramp's end and the
/// four points left were not flat against it. The floor now comes from the raw differences.
#[test]
fn levels_one_and_a_half_apart_with_ramps_and_noise() {
    let x = grid(4.0 * KIB, 4.0 * KIB * 2f64.powi(2 + 8 + 3), 4);
    let lv = [(0.5, 16.0 * KIB), (0.75, 64.0 * KIB), (1.125, 256.0 * KIB), (1.6875, f64::INFINITY)];
    let p = detect_plateaus(&x, &synth(&x, &lv, 3, 0.0294, 0, 122), 1.3);
    assert_eq!(p.len(), 4, "{:?}", p.iter().map(|q| (q.latency, q.points.clone())).collect::<Vec<_>>());
    for (k, (q, l)) in p.iter().zip(&lv).enumerate() {
        assert!(within(q.latency, l.0, 0.08), "level {k}: {} vs {}", q.latency, l.0);
        if k + 1 < lv.len() {
            assert!(within(q.capacity.unwrap(), l.1, 0.25), "level {k}: {:?} vs {}", q.capacity, l.1);
        }
    }
}
