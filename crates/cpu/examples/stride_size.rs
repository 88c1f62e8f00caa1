//! Diagnostic: fastest-of-N GB/s of the seed-002 strided copy at a chosen buffer size.
//! `cargo run --release -p memscope-cpu --example stride_size -- KIB RUNS`
use memscope_cpu::stride::{strided_copy, strides};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let kib: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(32768);
    let runs: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(30);
    let n = kib * 1024;
    let src = vec![1u8; n];
    let mut dst = vec![2u8; n];
    let st = strides();
    let mut best = vec![0f64; st.len()];
    let reps = (32768 / kib).max(1);
    for _ in 0..runs {
        for (i, &s) in st.iter().enumerate() {
            let t = Instant::now();
            for _ in 0..reps {
                strided_copy(&src, &mut dst, s);
            }
            best[i] = best[i].max((n * reps) as f64 / t.elapsed().as_secs_f64() / 1e9);
        }
    }
    let line: Vec<String> = st.iter().zip(&best).map(|(s, g)| format!("{s}:{g:.1}")).collect();
    println!("{kib} KiB: {}", line.join(" "));
    println!("{:?}", memscope_cpu::stride::line_from_strides(&st, &best));
}
