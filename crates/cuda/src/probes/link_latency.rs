//! The latency half of the `link` probe (docs/INTERCONNECT.md): nvbandwidth's host_device_latency_sm (one GPU
//! thread chasing a random cycle in mapped pinned host memory with ld.global.cv, kernels/link.cu
//! link_chase; the whole chase's %globaltimer time over its hops, CUDA events as second opinion)
//! and an 8-byte host -> device -> host round trip timed on the host.

use super::link_time::Pinned;
use super::summarize;
use crate::gpu::timing::stream_sync;
use crate::gpu::Module;
use crate::gpu::Stream;
use crate::CudaTarget;
use memscope_core::keys;
use memscope_core::{Confidence, Finding, ProbeError, ProbeOutput};
use std::ffi::c_void;

/// host_device_latency_sm and the host's small-copy round trip.
pub(crate) fn latency(t: &mut CudaTarget, s: Stream, out: &mut ProbeOutput, quick: bool) -> Result<(), ProbeError> {
    use rand::seq::SliceRandom;
    use rand::SeedableRng;
    const NODES: usize = 4096;
    const STRIDE_WORDS: usize = 32; // 256 bytes apart: 1 MiB in all
    let mut chain = Pinned::new((NODES * STRIDE_WORDS * 8) as u64)?;
    let mut order: Vec<usize> = (0..NODES).collect();
    order.shuffle(&mut rand_chacha::ChaCha8Rng::seed_from_u64(16));
    let base = chain.dev;
    {
        let w = chain.words();
        for i in 0..NODES {
            let (a, n) = (order[i], order[(i + 1) % NODES]);
            w[a * STRIDE_WORDS] = base + (n * STRIDE_WORDS * 8) as u64;
        }
    }
    let start = base + (order[0] * STRIDE_WORDS * 8) as u64;
    let hops = NODES as u64;
    let res = t.scratch(64)?;
    let reps = if quick { 3 } else { 5 };
    let mut ns = Vec::new();
    let mut cycles = Vec::new();
    let mut event_ns = Vec::new();
    for r in 0..=reps {
        let ms = super::bw::timed(t, std::ptr::null_mut(), 1, |tt| {
            tt.gpu.launch(Module::Link, "link_chase", 1, 1, 0, &[start, hops, res], std::ptr::null_mut())
        })?;
        let v: Vec<u64> = t.gpu.dtoh(res, 3)?;
        if r > 0 {
            ns.push(v[0] as f64 / hops as f64);
            cycles.push(v[1] as f64 / hops as f64);
            event_ns.push(ms * 1e6 / hops as f64);
        }
    }
    let (m, spread) = summarize(&ns, "host_device_latency_sm")?;
    let method = format!(
        "host_device_latency_sm: one GPU thread chases a random cycle of {NODES} pointers 256 bytes apart in mapped pinned \
         host memory with ld.global.cv (kernels/link.cu link_chase); %globaltimer over the whole chase / {hops} hops, \
         a warm-up chase, median of {reps}"
    );
    out.finding(
        keys::LINK_HOST_DEVICE_LATENCY_NS,
        Finding::number(m, "ns", &method, Confidence::High)
            .with_spread(spread)
            .with_cycles(memscope_core::stats::median(&cycles))
            .with_check(memscope_core::stats::median(&event_ns), "CUDA events around the chase kernel / hops", 0.03),
    );
    // The round trip: 8 bytes host -> device -> host on one stream, timed on the host.
    let mut small = Pinned::new(4096)?;
    small.words()[0] = 0x5eed;
    let mut rt = Vec::new();
    let samples = if quick { 100 } else { 400 };
    for i in 0..(samples + 20) {
        let t0 = std::time::Instant::now();
        // SAFETY: the pinned buffer holds 4096 bytes and outlives the synchronized stream; the
        // copies touch its first 16.
        unsafe {
            t.gpu.htod_async(res, small.ptr, 8, s, "cuMemcpyHtoDAsync (8 bytes)")?;
            let back = (small.ptr as *mut u8).add(8) as *mut c_void;
            t.gpu.dtoh_async(back, res, 8, s, "cuMemcpyDtoHAsync (8 bytes)")?;
        }
        stream_sync(s, "cuStreamSynchronize")?;
        if i >= 20 {
            rt.push(t0.elapsed().as_secs_f64() * 1e9);
        }
    }
    if small.words()[1] != 0x5eed {
        return Err(ProbeError::Failed("the 8-byte round trip did not bring its word back".into()));
    }
    let (m, spread) = summarize(&rt, "round trip")?;
    out.finding(
        keys::LINK_HOST_ROUND_TRIP_NS,
        Finding::number(
            m,
            "ns",
            &format!(
                "8 bytes pinned host -> device (cuMemcpyHtoDAsync) then back (cuMemcpyDtoHAsync) and cuStreamSynchronize, \
                 timed on the host (std::time::Instant); 20 warm-ups, median of {samples}"
            ),
            Confidence::High,
        )
        .with_spread(spread),
    );
    Ok(())
}
