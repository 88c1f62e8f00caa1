//! TLB exploration by paired lines (seed 000 appendix "Page tables and the TLB"): each of N pages
//! holds two lines p and q. Order A visits every p, then every q (each q far from its page's last
//! use); order B visits p0 q0 p1 q1 ... (each q right after its own page's p). The same q lines are
//! timed in both orders, so the L2 placement of the lines cancels and A minus B is the translation
//! cost alone. A page-size scan moves q away from p by d: once d crosses a page, q misses in B too.
//!
//! Run on the GPU machine: `tlb_pairs` (prints CSV; results/h200/tlb-2026-11-30T0116).

use memscope_core::{CachePath, ChaseSpec, Target, TargetError};
use memscope_cuda::CudaTarget;

/// Mean per-hop ns of the q hops (odd positions of B, second half of A) and of the p hops.
fn run(t: &mut CudaTarget, p: &[u64], q: &[u64], interleaved: bool) -> Result<(f64, f64), TargetError> {
    let n = p.len();
    let addrs: Vec<u64> = if interleaved {
        p.iter().zip(q).flat_map(|(a, b)| [*a, *b]).collect()
    } else {
        p.iter().chain(q).copied().collect()
    };
    let len = addrs.len() as u64;
    let laps = (32_000 / len).max(4);
    let mut spec = ChaseSpec::new(addrs, CachePath::L1Bypass, laps * len);
    spec.warmup_laps = 2;
    spec.repeats = 1;
    spec.per_hop = true;
    let r = t.chase(&spec)?;
    let ph = r.per_hop_ns.ok_or_else(|| TargetError::Device("no per-hop times".into()))?;
    let (mut sq, mut nq, mut sp, mut np) = (0.0, 0usize, 0.0, 0usize);
    for (j, x) in ph.iter().enumerate() {
        let k = j % len as usize;
        let is_q = if interleaved { k % 2 == 1 } else { k >= n };
        // Drop outliers (refresh stalls, far L2 first touches) from both sums alike.
        if *x > 1000.0 {
            continue;
        }
        if is_q {
            sq += x;
            nq += 1;
        } else {
            sp += x;
            np += 1;
        }
    }
    Ok((sq / nq.max(1) as f64, sp / np.max(1) as f64))
}

fn main() {
    let mut t = CudaTarget::open(0).expect("no CUDA GPU");
    let total: u64 = 80 << 30;
    let buf = t.alloc(total).expect("alloc");
    println!("# {} base {:#x} ({} GiB)", t.info().name, buf.base, total >> 30);
    println!("test,stride_bytes,pages,d_bytes,qA_ns,qB_ns,pB_ns,A_minus_B_ns");
    let strides = [2u64 << 20, 4 << 20, 8 << 20, 16 << 20, 32 << 20, 64 << 20, 256 << 20];
    let counts = [4u64, 8, 12, 16, 20, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 1024, 2048, 4096];
    for s in strides {
        for n in counts {
            if n * s > total {
                break;
            }
            let p: Vec<u64> = (0..n).map(|i| buf.base + i * s + ((i * 37) % 16) * 4096).collect();
            let q: Vec<u64> = p.iter().map(|a| a + 2048).collect();
            match (run(&mut t, &p, &q, false), run(&mut t, &p, &q, true)) {
                (Ok((qa, _)), Ok((qb, pb))) => println!("entries,{s},{n},2048,{qa:.2},{qb:.2},{pb:.2},{:.2}", qa - qb),
                (a, b) => println!("entries,{s},{n},2048,error {a:?} {b:?}"),
            }
        }
    }
    // Page scan from a 1 GiB-aligned base so a page of any size up to 1 GiB starts at each p.
    let aligned = buf.base.div_ceil(1 << 30) << 30;
    println!("# page scan base {aligned:#x}");
    for n in [32u64, 256] {
        let s = 256u64 << 20;
        let mut d = 4096u64;
        while d < s {
            let p: Vec<u64> = (0..n).map(|i| aligned + i * s).collect();
            let q: Vec<u64> = p.iter().map(|a| a + d).collect();
            match (run(&mut t, &p, &q, false), run(&mut t, &p, &q, true)) {
                (Ok((qa, _)), Ok((qb, pb))) => println!("page,{s},{n},{d},{qa:.2},{qb:.2},{pb:.2},{:.2}", qa - qb),
                (a, b) => println!("page,{s},{n},{d},error {a:?} {b:?}"),
            }
            d *= 2;
        }
    }
    t.free(buf);
}
