//! TLB exploration on a real GPU (seed 000 appendix "Page tables and the TLB"): L1-bypassing
//! chases with one line per stride block, over strides from 64 KiB to 1 GiB and page counts up to
//! what the device memory holds, printing the median, p10 and p90 per-hop time of each. Used to
//! find where (and whether) translation steps appear on the H200 before fixing the `tlb` probe's
//! ranges (results/h200/tlb-2026-11-30T0116).
//!
//! Run on the GPU machine: `tlb_explore [MAX_GIB]` (default 96 GiB of footprint at most).

use memscope_core::{CachePath, ChaseSpec, Target, TargetError};
use memscope_cuda::CudaTarget;

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[((v.len() - 1) as f64 * p).round() as usize]
}

fn line(base: u64, stride: u64, i: u64) -> u64 {
    let slots = (stride / 128).max(1);
    base + i * stride + ((i * 2_654_435_761) % slots) * 128 % stride
}

fn chase(t: &mut CudaTarget, addrs: Vec<u64>, path: CachePath) -> Result<(f64, f64, f64, f64), TargetError> {
    let n = addrs.len() as u64;
    let mut spec = ChaseSpec::new(addrs, path, (n * 4).clamp(4000, 16000));
    spec.warmup_laps = 2;
    spec.repeats = 3;
    spec.per_hop = true;
    let r = t.chase(&spec)?;
    let mut ph = r.per_hop_ns.unwrap_or_default();
    if ph.is_empty() {
        return Err(TargetError::Device("no per-hop times".into()));
    }
    let mean = r.ns_per_hop.iter().sum::<f64>() / r.ns_per_hop.len() as f64;
    Ok((mean, pct(&mut ph, 0.5), pct(&mut ph, 0.1), pct(&mut ph, 0.9)))
}

fn main() {
    let max_gib: u64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(96);
    let mut t = CudaTarget::open(0).expect("no CUDA GPU");
    let info = t.info();
    println!("# {} clock {:?} Hz", info.name, info.clock_hz);
    let total = max_gib << 30;
    let buf = t.alloc(total).expect("alloc");
    println!("# one allocation of {max_gib} GiB at {:#x}", buf.base);
    let counts: &[u64] = &[
        2, 4, 8, 12, 16, 20, 24, 32, 40, 48, 64, 96, 128, 160, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096,
        6144, 8192,
    ];
    println!("stride_bytes,pages,footprint_mib,mean_ns,median_ns,p10_ns,p90_ns");
    let mut s = 64u64 << 10;
    while s <= 1 << 30 {
        for &n in counts {
            if n * s > total {
                break;
            }
            let addrs: Vec<u64> = (0..n).map(|i| line(buf.base, s, i)).collect();
            match chase(&mut t, addrs, CachePath::L1Bypass) {
                Ok((m, p50, p10, p90)) => {
                    println!("{s},{n},{},{m:.2},{p50:.2},{p10:.2},{p90:.2}", (n * s) >> 20)
                }
                Err(e) => println!("{s},{n},{},error,{e}", (n * s) >> 20),
            }
        }
        s *= 2;
    }
    t.free(buf);
    // Separate 2 MiB allocations, one line each: pages that cannot share a larger mapping unless
    // the driver places them contiguously.
    println!("# separate 2 MiB allocations, one line each");
    println!("allocs,mean_ns,median_ns,p10_ns,p90_ns");
    let mut bufs = Vec::new();
    for &n in counts.iter().filter(|&&n| n <= 4096) {
        while (bufs.len() as u64) < n {
            bufs.push(t.alloc(2 << 20).expect("alloc 2 MiB"));
        }
        let addrs: Vec<u64> =
            bufs.iter().enumerate().map(|(i, b)| b.base + ((i as u64 * 40503) % 16384) * 128).collect();
        match chase(&mut t, addrs, CachePath::L1Bypass) {
            Ok((m, p50, p10, p90)) => println!("{n},{m:.2},{p50:.2},{p10:.2},{p90:.2}"),
            Err(e) => println!("{n},error,{e}"),
        }
    }
    let mut prev = 0;
    let mut gaps = std::collections::BTreeMap::new();
    for b in &bufs {
        if prev != 0 {
            *gaps.entry(b.base as i64 - prev as i64).or_insert(0u32) += 1;
        }
        prev = b.base;
    }
    println!("# base gaps between consecutive 2 MiB allocations: {gaps:?}");
}
