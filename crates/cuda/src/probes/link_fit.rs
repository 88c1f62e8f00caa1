//! The analysis of the host <-> device link probe (docs/INTERCONNECT.md), pure so it is tested on synthetic
//! timings (the simulator does not model the host link): the large-size plateau of a bandwidth
//! versus size curve, the size reaching half of it, and the nominal rate of a PCIe link from its
//! generation and width.
//!
//! Nominal rates: PCIe 1.x/2.x signal 2.5/5 GT/s per lane with 8b/10b line encoding; 3.0, 4.0 and
//! 5.0 signal 8/16/32 GT/s with 128b/130b encoding (PCI Express Base Specification 3.0, section
//! 4.2; 5.0 keeps it); 6.0 signals 64 GT/s in FLIT mode, whose CRC/FEC bytes are not counted here.
//! So gen5 x16 is 32 GT/s x 16 / 8 = 64 GB/s raw per direction, 63.0 GB/s after 128b/130b. Packet
//! (TLP/DLLP) headers cost more on top, depending on the max payload size the host negotiated,
//! which NVML does not report: the fraction reached is given against the encoded rate and the raw one.

/// The plateau of a bandwidth curve.
#[derive(Debug, Clone, PartialEq)]
pub struct Plateau {
    /// Median rate over the plateau's sizes, bytes/s.
    pub bytes_per_s: f64,
    /// The smallest size of the plateau.
    pub from_bytes: f64,
    /// How many sizes it spans.
    pub points: usize,
    /// The smallest size that reaches half the plateau (n-half), when one does.
    pub half_bytes: Option<f64>,
}

/// Relative distance from the top within which a size counts as on the plateau.
pub const PLATEAU_TOLERANCE: f64 = 0.05;

/// The plateau of `ys` (rates) over ascending sizes `xs`: the longest run of the largest sizes
/// whose rates are all within PLATEAU_TOLERANCE of the median of the two largest sizes' rates
/// (one size at least). None for empty or non-finite input.
pub fn plateau(xs: &[f64], ys: &[f64]) -> Option<Plateau> {
    if xs.is_empty() || xs.len() != ys.len() || ys.iter().any(|y| !y.is_finite() || *y <= 0.0) {
        return None;
    }
    let n = ys.len();
    let top = if n >= 2 { (ys[n - 1] + ys[n - 2]) / 2.0 } else { ys[0] };
    let mut start = n - 1;
    while start > 0 && (ys[start - 1] - top).abs() <= PLATEAU_TOLERANCE * top {
        start -= 1;
    }
    // The second-largest size may itself be off the plateau (a dip at the top): then only the last.
    if (ys[start] - top).abs() > PLATEAU_TOLERANCE * top {
        start = n - 1;
    }
    let on = &ys[start..];
    let value = memscope_core::stats::median(on);
    let half_bytes = xs.iter().zip(ys).find(|(_, y)| **y >= 0.5 * value).map(|(x, _)| *x);
    Some(Plateau { bytes_per_s: value, from_bytes: xs[start], points: on.len(), half_bytes })
}

/// A PCIe link's nominal rate per direction.
#[derive(Debug, Clone, PartialEq)]
pub struct Nominal {
    /// Signalling rate x lanes / 8, bytes/s.
    pub raw_bytes_per_s: f64,
    /// After line encoding, bytes/s.
    pub encoded_bytes_per_s: f64,
    /// "128b/130b" and the like.
    pub encoding: &'static str,
}

/// The nominal rate of PCIe generation `gen` with `width` lanes; None for unknown generations.
pub fn pcie_nominal(gen: u32, width: u32) -> Option<Nominal> {
    let (gts, factor, encoding) = match gen {
        1 => (2.5, 0.8, "8b/10b"),
        2 => (5.0, 0.8, "8b/10b"),
        3 => (8.0, 128.0 / 130.0, "128b/130b"),
        4 => (16.0, 128.0 / 130.0, "128b/130b"),
        5 => (32.0, 128.0 / 130.0, "128b/130b"),
        6 => (64.0, 1.0, "FLIT mode (CRC/FEC not counted)"),
        _ => return None,
    };
    if width == 0 {
        return None;
    }
    let raw = gts * 1e9 * width as f64 / 8.0;
    Some(Nominal { raw_bytes_per_s: raw, encoded_bytes_per_s: raw * factor, encoding })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// A link of `peak` bytes/s with a fixed cost per copy: rate(size) = size / (setup + size/peak).
    fn curve(peak: f64, setup_s: f64, noise: f64, seed: u64) -> (Vec<f64>, Vec<f64>) {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let xs: Vec<f64> = (0..10).map(|k| 4096.0 * 4f64.powi(k)).collect();
        let ys = xs.iter().map(|&x| x / (setup_s + x / peak) * (1.0 + noise * rng.gen_range(-1.0..1.0))).collect();
        (xs, ys)
    }

    #[test]
    fn plateau_of_a_clean_latency_bandwidth_curve() {
        let (xs, ys) = curve(55e9, 10e-6, 0.0, 1);
        let p = plateau(&xs, &ys).unwrap();
        assert!((p.bytes_per_s - 55e9).abs() / 55e9 < 0.02, "{p:?}");
        // size / (setup + size/peak) >= 0.95 peak from size >= 19 x setup x peak = 10.5 MB: 16 MiB on.
        assert_eq!(p.from_bytes, 16.0 * 1048576.0, "{p:?}");
        // Half the plateau at size = setup x peak = 550 KB: the first size above is 1 MiB.
        assert_eq!(p.half_bytes, Some(1048576.0));
    }

    #[test]
    fn plateau_under_noise_stays_within_the_noise() {
        for seed in 0..50 {
            let (xs, ys) = curve(50e9, 8e-6, 0.02, seed);
            let p = plateau(&xs, &ys).unwrap();
            assert!((p.bytes_per_s - 50e9).abs() / 50e9 < 0.03, "seed {seed}: {p:?}");
            assert!(p.points >= 2 && p.from_bytes <= 64.0 * 1048576.0, "seed {seed}: {p:?}");
        }
    }

    #[test]
    fn plateau_refuses_bad_input() {
        assert!(plateau(&[], &[]).is_none());
        assert!(plateau(&[1.0, 2.0], &[1.0]).is_none());
        assert!(plateau(&[1.0, 2.0], &[1.0, f64::NAN]).is_none());
        assert_eq!(plateau(&[4096.0], &[3e9]).unwrap().bytes_per_s, 3e9);
    }

    #[test]
    fn pcie_rates() {
        let g5 = pcie_nominal(5, 16).unwrap();
        assert_eq!(g5.raw_bytes_per_s, 64e9);
        assert!((g5.encoded_bytes_per_s - 63.015e9).abs() < 0.01e9);
        assert_eq!(pcie_nominal(3, 16).unwrap().raw_bytes_per_s, 16e9);
        assert_eq!(pcie_nominal(2, 8).unwrap().encoded_bytes_per_s, 4e9);
        assert!(pcie_nominal(7, 16).is_none());
        assert!(pcie_nominal(5, 0).is_none());
    }
}
